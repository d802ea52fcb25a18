/**
 * The I/O a real direct turn of the bench does, as data (issue 23): the two chat-completions request
 * bodies it streamed to the demo model and the tool calls between them, read from what the demo model
 * recorded. The I/O floor (io-workflow.ts, io-activities.ts) replays exactly these, so the floor and the
 * host move the same bytes to the model and to the MCP servers. The tool list goes by reference (a file
 * the floor's worker reads once), as the host's turn records tool references and its worker holds the
 * schemas: otherwise the floor's history would carry it three times per turn, which the host's does not.
 * No Node imports: the workflow bundle takes the types from here.
 */

/** A chat-completions request body as a host sent it (model, messages, tools, stream options). */
export type ChatRequest = Record<string, unknown> & { messages: unknown[] };

/** One tool call the model asked for, on the server and tool the host's `server__tool` name points at. */
export interface IoToolCall {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** What one direct turn sent: its requests without their tool list, the tool list, its tool calls. */
export interface CapturedTurn {
  /** The request of each LLM step, in order, without `tools`: the first answers with tool calls, the last with text. */
  requests: ChatRequest[];
  /** The `tools` both requests carried. */
  tools: unknown[];
  /** The first step's tool calls, in the model's order (run in parallel, like the turn's). */
  calls: IoToolCall[];
}

/** The I/O floor's input: the captured turn with its tool list in a file (JSON array) the worker reads once. */
export type IoTurn = Omit<CapturedTurn, 'tools'> & { toolsFile: string };

/** A model call of the I/O floor: the request body, its `tools` in `toolsFile`. */
export interface ModelCall {
  body: ChatRequest;
  toolsFile: string;
}

/** What the model's stream came to: the assistant message a host needs for its next step. */
export interface AssistantMessage {
  content: string | null;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

export interface IoActivities {
  noop(): Promise<void>;
  /** Streams `request` from the model and reads it to the end. */
  model(call: ModelCall): Promise<AssistantMessage>;
  /** Calls the tool on its MCP server; `key`: the idempotency key, unique per turn as the host's is. */
  tool(call: IoToolCall & { key: string }): Promise<{ isError: boolean; text: string }>;
}

const CHAT_PATH = '/v1/chat/completions';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The turn's I/O from what the demo model recorded of one 1-tool-step turn (and nothing else): two chat
 * requests, the second carrying the assistant's tool calls of the first. Throws when it is not that.
 */
export function ioTurnFrom(recorded: ReadonlyArray<{ path: string; body: unknown }>): CapturedTurn {
  const bodies = recorded.filter((r) => r.path === CHAT_PATH).map((r) => r.body);
  if (bodies.length !== 2) throw new Error(`expected the 2 chat requests of a 1-tool-step turn, the model recorded ${bodies.length}`);
  const requests = bodies.map((b, i) => {
    if (!isObject(b) || !Array.isArray(b['messages']) || b['stream'] !== true) throw new Error(`chat request ${i + 1} is not a streamed chat-completions body`);
    return b as ChatRequest;
  });
  const assistant = (requests[1] as ChatRequest).messages.filter((m): m is Record<string, unknown> => isObject(m) && m['role'] === 'assistant').at(-1);
  const toolCalls = assistant?.['tool_calls'];
  if (!Array.isArray(toolCalls) || toolCalls.length === 0) throw new Error('the second chat request carries no assistant tool calls');
  const calls = toolCalls.map((tc: unknown): IoToolCall => {
    const fn = isObject(tc) ? tc['function'] : undefined;
    const name = isObject(fn) ? fn['name'] : undefined;
    const args = isObject(fn) ? fn['arguments'] : undefined;
    const split = typeof name === 'string' ? name.indexOf('__') : -1;
    if (typeof name !== 'string' || split <= 0 || split + 2 >= name.length) throw new Error(`tool call name ${JSON.stringify(name)} is not server__tool`);
    const parsed: unknown = typeof args === 'string' ? JSON.parse(args === '' ? '{}' : args) : undefined;
    if (!isObject(parsed)) throw new Error(`tool call ${name}: arguments are not a JSON object`);
    return { server: name.slice(0, split), tool: name.slice(split + 2), arguments: parsed };
  });
  const tools = requests.map((r) => r['tools']);
  if (!Array.isArray(tools[0]) || JSON.stringify(tools[0]) !== JSON.stringify(tools[1])) throw new Error('the two chat requests do not carry the same tool list');
  return { requests: requests.map(({ tools: _tools, ...rest }) => rest as ChatRequest), tools: tools[0] as unknown[], calls };
}
