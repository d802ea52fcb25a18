/**
 * A turn's MCP messages for the console's debug view, rebuilt from what the turn records: each
 * `tools/call` the host sent and the result the model saw, and each question a server asked
 * (`elicitation/create`) with the user's action, all redacted as in the audit log whoever reads. The
 * wire messages themselves are kept nowhere (the audit log holds redacted arguments and outcomes,
 * not results), so this is the turn's record in the protocol's shape, not a capture.
 */
import type { z } from 'zod';
import type { TurnState } from '../../shared/turn';
import type { McpMessages } from '../contract';

type Message = z.output<typeof McpMessages>['messages'][number];

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export function mcpMessages(state: TurnState, redactArguments: (args: unknown) => unknown): z.output<typeof McpMessages> {
  // A call that waited for a decision reached its server only if approved.
  const notSent = new Set((state.approvals ?? []).filter((a) => a.state !== 'approved').map((a) => a.toolCallId));
  const messages: Message[] = [];
  for (const c of state.toolCalls) {
    if (c.server === undefined || c.tool === undefined || notSent.has(c.id)) continue;
    const base = { server: c.server, toolCallId: c.id };
    messages.push({ ...base, at: c.startedAt, direction: 'host_to_server', message: { jsonrpc: '2.0', method: 'tools/call', params: { name: c.tool, arguments: c.arguments } } });
    if (c.finishedAt !== undefined) {
      const result = { content: [{ type: 'text', text: c.result ?? '' }], ...(c.isError ? { isError: true } : {}) };
      messages.push({ ...base, at: c.finishedAt, direction: 'server_to_host', message: { jsonrpc: '2.0', result } });
    }
  }
  for (const e of state.events) {
    const server = text(e.data['server']);
    const toolCallId = text(e.data['toolCallId']);
    if (server === undefined || toolCallId === undefined) continue;
    const base = { server, toolCallId, at: e.at };
    if (e.type === 'input_required') {
      const { mode, message, url, requestedSchema } = e.data;
      const params = { ...(mode !== undefined ? { mode } : {}), message, ...(url !== undefined ? { url } : {}), ...(requestedSchema !== undefined ? { requestedSchema } : {}) };
      messages.push({ ...base, direction: 'server_to_host', message: { jsonrpc: '2.0', method: 'elicitation/create', params } });
    } else if (e.type === 'input_provided') {
      messages.push({ ...base, direction: 'host_to_server', message: { jsonrpc: '2.0', result: { action: e.data['action'] } } });
    }
  }
  // In the turn's order; a question sits between its call's request and answer.
  messages.sort((a, b) => Date.parse(a.at ?? '') - Date.parse(b.at ?? ''));
  // Whoever reads: the audit log's rules over each whole message (listed keys, e-mail addresses in any text).
  return { turnId: state.turnId, messages: messages.map((m) => ({ ...m, message: redactArguments(m.message) as Message['message'] })) };
}
