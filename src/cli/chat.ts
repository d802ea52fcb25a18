/**
 * `npm run chat -- [--role admin|teacher|student] [--session ID] [--api URL] [--token JWT]`: a terminal
 * chat with the running host, through its public HTTP API (POST a message, follow the turn's SSE
 * stream). Live text as the model writes, tool calls as they happen, approvals asked inline, Ctrl-C
 * cancels the turn in flight (a second Ctrl-C, or one at the prompt, quits), and a session named again
 * is resumed with its last messages.
 *
 * Without --token it mints a demo token for --role (default admin) with JWT_SECRET, or with the dev
 * secret `npm start` keeps in DATA_DIR (default .data), as `npm run token` does.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { parseArgs } from 'node:util';
import { sseEvents, type SseEvent } from '../shared/sse';
import { mintTokenFromArgs, UsageError } from './mint-token';

const root = path.resolve(__dirname, '..', '..', '..');
/** How long a message is sent again while the service answers 503 or not at all. */
const SEND_FOR_MS = 30_000;
const USAGE = 'usage: npm run chat -- [--role admin|teacher|student] [--session ID] [--api URL] [--token JWT]';

interface ChatOptions {
  api: string;
  token: string;
  session: string;
}

async function chatOptions(argv: string[], env: NodeJS.ProcessEnv): Promise<ChatOptions> {
  let values: { role?: string; session?: string; api?: string; token?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { role: { type: 'string' }, session: { type: 'string' }, api: { type: 'string' }, token: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  const session = values.session ?? `chat-${randomBytes(4).toString('hex')}`;
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(session)) throw new UsageError('--session: 1-64 characters from [a-zA-Z0-9_-]');
  let token = values.token ?? env.DMH_TOKEN;
  if (!token) {
    const secretFile = path.join(env.DATA_DIR ? path.resolve(root, env.DATA_DIR) : path.join(root, '.data'), 'dev-jwt-secret');
    const secret = env.JWT_SECRET || (existsSync(secretFile) ? readFileSync(secretFile, 'utf8').trim() : undefined);
    if (!secret) throw new UsageError(`no --token, no JWT_SECRET and no ${secretFile} yet: start the host with npm start first`);
    token = await mintTokenFromArgs(['--role', values.role ?? 'admin'], { ...env, JWT_SECRET: secret });
  }
  const api = (values.api ?? env.API_URL ?? `http://127.0.0.1:${env.API_PORT || '3000'}`).replace(/\/+$/, '');
  return { api, token, session };
}

/** Lines typed by the user, one at a time, whether the chat waits for a message or an approval. */
function lineReader(rl: Interface): { next(): Promise<string | undefined> } {
  const queued: string[] = [];
  const waiting: Array<(line: string | undefined) => void> = [];
  let closed = false;
  rl.on('line', (line) => (waiting.length ? waiting.shift()?.(line) : queued.push(line)));
  rl.on('close', () => {
    closed = true;
    for (const w of waiting.splice(0)) w(undefined);
  });
  return {
    next: () => {
      if (queued.length) return Promise.resolve(queued.shift());
      if (closed) return Promise.resolve(undefined);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

async function main(): Promise<void> {
  const opts = await chatOptions(process.argv.slice(2), process.env);
  const out = (text: string): boolean => process.stdout.write(text);
  const headers = { authorization: `Bearer ${opts.token}` };
  const api = async (method: string, route: string, body?: unknown, extra: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${opts.api}${route}`, {
      method,
      headers: body === undefined ? { ...headers, ...extra } : { ...headers, ...extra, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  };
  const problem = (r: { status: number; json: Record<string, unknown> }): string =>
    String((r.json['error'] as { message?: string } | undefined)?.message ?? `HTTP ${r.status}`);

  // Readline owns the line being typed: it echoes it (in a terminal, where stdin is raw) and ends it
  // with a newline on Enter, so what is printed next starts below it instead of over it.
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY === true && process.stdout.isTTY === true });
  const lines = lineReader(rl);
  /** Puts a question (or the prompt) through readline, which redraws it with the typed text, and reads the answer. */
  const ask = (question: string): Promise<string | undefined> => {
    rl.setPrompt(question);
    rl.prompt();
    return lines.next();
  };

  // Who we are and where we are.
  const resumed = await api('GET', `/v1/sessions/${opts.session}/messages`);
  if (resumed.status === 401) throw new UsageError(`the API refused the token: ${problem(resumed)}`);
  if (resumed.status === 200) {
    const messages = resumed.json['messages'] as Array<{ role: string; content: string }>;
    out(`Resuming session ${opts.session} (${String(resumed.json['totalMessages'])} messages).\n`);
    for (const m of messages.slice(-6)) out(`${m.role === 'user' ? 'you' : 'assistant'}> ${m.content}\n`);
  } else {
    out(`Session ${opts.session} on ${opts.api}. Ctrl-C cancels a running turn; Ctrl-D quits.\n`);
  }

  // The message being sent (no turn id yet) or the turn being followed; Ctrl-C at the prompt quits.
  let active: { turnId?: string; cancelling: boolean } | undefined;
  const cancel = (turnId: string): void => {
    void api('POST', `/v1/turns/${turnId}/cancel`).then((r) => {
      if (r.status !== 202) out(`(cancel refused: ${problem(r)})\n`);
    });
  };
  const interrupt = (): void => {
    if (!active) {
      rl.close();
      process.exit(0);
    }
    if (active.cancelling) process.exit(130);
    active.cancelling = true;
    out('\n(cancelling…)\n');
    // Still being sent: cancelled as soon as its turn id is known.
    if (active.turnId) cancel(active.turnId);
  };
  rl.on('SIGINT', interrupt);
  process.on('SIGINT', interrupt);

  /** Follows one turn's SSE stream to its end, printing as it goes; asks for approvals inline. */
  const follow = async (turnId: string, eventsUrl: string): Promise<void> => {
    const res = await fetch(`${opts.api}${eventsUrl}`, { headers: { ...headers, accept: 'text/event-stream' } });
    if (res.status !== 200 || !res.body) throw new Error(`events: HTTP ${res.status}`);
    let shown = '';
    let speaking = false;
    /** Approvals of the turn ahead already put to the user (a `waiting` event repeats when anything changes). */
    const askedAhead = new Set<string>();
    const say = (text: string): void => {
      if (!speaking) out('assistant> ');
      speaking = true;
      out(text);
    };
    const endLine = (): void => {
      if (speaking) out('\n');
      speaking = false;
    };
    const handle = async (e: SseEvent): Promise<boolean> => {
      const d = e.data;
      switch (e.event) {
        case 'status':
          if (d['phase'] === 'queued') out('(queued behind an earlier message of this session)\n');
          if (d['phase'] === 'calling_llm') shown = '';
          return false;
        case 'text_delta': {
          const offset = Number(d['offset']);
          const text = String(d['text'] ?? '');
          // Offsets restart on a reconnect or retry: print only what was not shown yet.
          const fresh = text.slice(Math.max(0, shown.length - offset));
          if (fresh) say(fresh);
          shown = shown.slice(0, offset) + text;
          return false;
        }
        case 'text_reset':
          endLine();
          out('(the model call is being retried)\n');
          shown = '';
          return false;
        case 'tool_call_started':
          endLine();
          out(`  → ${String(d['name'])} ${JSON.stringify(d['arguments'] ?? {})}\n`);
          return false;
        case 'tool_call_finished':
          out(d['isError'] ? `  ✗ ${String(d['message'] ?? d['result'] ?? 'failed')}\n` : `  ← ${String(d['name'])} ok\n`);
          return false;
        case 'notice':
          out(`  ! ${String(d['message'])}\n`);
          return false;
        case 'waiting': {
          // Queued behind a turn that waits for a decision: decide it here, or cancel it to go on.
          const pending = (d['pendingApprovals'] as Array<Record<string, unknown>> | undefined) ?? [];
          for (const p of pending) {
            if (askedAhead.has(String(p['toolCallId']))) continue;
            askedAhead.add(String(p['toolCallId']));
            endLine();
            const until = new Date(String(p['deadline'])).toLocaleTimeString();
            const answer = ((await ask(`  ? the turn ahead waits for approval of ${String(p['name'])} ${JSON.stringify(p['arguments'] ?? {})} (denied at ${until} if nobody decides). Approve, deny or cancel that turn? [y/N/c] `)) ?? '').trim();
            if (/^c(ancel)?$/i.test(answer)) {
              const r = await api('POST', String(d['cancelUrl']));
              out(r.status === 202 ? '  cancelling the turn ahead\n' : `  (cancel refused: ${problem(r)})\n`);
              break;
            }
            const approve = /^y(es)?$/i.test(answer);
            const r = await api('POST', String(p['decideUrl']), { approve });
            out(r.status === 200 ? `  ${approve ? 'approved' : 'denied'}\n` : `  (decision refused: ${problem(r)})\n`);
          }
          return false;
        }
        case 'authorization_required':
          // OAuth consent happens in a browser; the turn continues by itself once the user is back.
          endLine();
          out(`  ? ${String(d['server'])} needs your permission to act for you. Open this link, allow, and the turn continues:\n    ${String(d['authorizationUrl'])}\n`);
          return false;
        case 'input_required': {
          // A server asks during a tool call: answer with JSON fields, or decline / cancel.
          endLine();
          const url = `/v1/turns/${turnId}/inputs/${String(d['toolCallId'])}`;
          if (d['mode'] === 'url' || d['mode'] === 'sampling') {
            // No form: a page to open (URL mode), or leave to use the model (sampling). Yes or no.
            out(d['mode'] === 'url' ? `  ? ${String(d['server'])} asks you to open ${String(d['url'])}\n    ${String(d['message'])}\n` : `  ? ${String(d['message'])}\n`);
            const yes = ((await ask(d['mode'] === 'url' ? '    Done (opened it)? [y/N/c] ' : '    Allow? [y/N/c] ')) ?? '').trim().toLowerCase();
            const action = yes === 'y' || yes === 'yes' ? 'accept' : yes === 'c' ? 'cancel' : 'decline';
            const r = await api('POST', url, { action });
            if (r.status !== 200) out(`    (refused: ${problem(r)})\n`);
            return false;
          }
          const schema = (d['requestedSchema'] ?? {}) as { properties?: Record<string, { type?: string; description?: string }>; required?: string[] };
          out(`  ? ${String(d['server'])} asks: ${String(d['message'])}\n`);
          for (const [name, p] of Object.entries(schema.properties ?? {})) {
            out(`      ${name}${schema.required?.includes(name) ? ' *' : ''} (${p.type ?? 'value'})${p.description ? `: ${p.description}` : ''}\n`);
          }
          for (;;) {
            const answer = ((await ask('    answer as JSON, e.g. {"name": "Ada"}, or decline / cancel: ')) ?? 'cancel').trim();
            let body: Record<string, unknown>;
            if (/^(decline|cancel)$/i.test(answer)) body = { action: answer.toLowerCase() };
            else {
              try {
                body = { action: 'accept', content: JSON.parse(answer) as unknown };
              } catch {
                out('    (not JSON)\n');
                continue;
              }
            }
            const r = await api('POST', url, body);
            if (r.status === 200) break;
            out(`    (refused: ${problem(r)})\n`);
            if (r.status !== 400) break;
          }
          return false;
        }
        case 'authorization_completed':
          out(d['outcome'] === 'authorized' ? `  ${String(d['server'])} authorized\n` : `  ${String(d['server'])} was not authorized in time\n`);
          return false;
        case 'approval_required': {
          endLine();
          const answer = (await ask(`  ? ${String(d['name'])} ${JSON.stringify(d['arguments'] ?? {})} needs approval. Approve? [y/N] `)) ?? '';
          const approve = /^y(es)?$/i.test(answer.trim());
          const r = await api('POST', `/v1/turns/${turnId}/approvals/${String(d['toolCallId'])}`, { approve });
          out(r.status === 200 ? `  ${approve ? 'approved' : 'denied'}\n` : `  (decision refused: ${problem(r)})\n`);
          return false;
        }
        case 'text': {
          const final = String(d['text'] ?? '');
          if (final.startsWith(shown) && shown) say(final.slice(shown.length));
          else if (final) {
            endLine();
            say(final);
          }
          return false;
        }
        case 'done':
          endLine();
          return true;
        case 'cancelled':
          endLine();
          out('(cancelled)\n');
          return true;
        case 'error':
          endLine();
          out(`error: ${String(d['message'] ?? d['code'])}\n`);
          return true;
        default:
          return false;
      }
    };
    for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
      if (await handle(e)) return;
    }
  };

  /**
   * POSTs a message under an Idempotency-Key of its own, again with that key after a 503 or a lost
   * connection: the first attempt may have started the turn, and the same key names it, never a second.
   * undefined when no answer came within SEND_FOR_MS.
   */
  const sendMessage = async (text: string): Promise<{ status: number; json: Record<string, unknown> } | undefined> => {
    const key = randomBytes(12).toString('base64url');
    const until = Date.now() + SEND_FOR_MS;
    for (let said = false; ; said = true) {
      const posted = await api('POST', `/v1/sessions/${opts.session}/messages`, { text }, { 'idempotency-key': key }).catch(() => undefined);
      if (posted && posted.status !== 503) return posted;
      if (Date.now() > until || active?.cancelling) return undefined;
      if (!said) out('(the service is unavailable; sending again, the same message under the same key…)\n');
      await new Promise((r) => setTimeout(r, 1000));
    }
  };

  for (;;) {
    const line = await ask('you> ');
    if (line === undefined) break;
    const text = line.trim();
    if (!text) continue;
    active = { cancelling: false };
    try {
      const posted = await sendMessage(text);
      if (!posted) {
        const why = active.cancelling ? 'stopped sending' : `the service did not answer for ${SEND_FOR_MS / 1000} s`;
        out(`(${why}: if the message reached it, its turn shows when the session is opened again)\n`);
        continue;
      }
      if (posted.status !== 202 && posted.status !== 200) {
        out(`(not sent: ${problem(posted)})\n`);
        continue;
      }
      const turnId = String(posted.json['turnId']);
      active.turnId = turnId;
      if (active.cancelling) cancel(turnId);
      await follow(turnId, String(posted.json['eventsUrl']));
    } finally {
      active = undefined;
    }
  }
  out('\n');
  rl.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`chat: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
