/**
 * Example MCP server used by the demo and the tests: a tiny notes store with one side-effecting
 * tool that dedupes on the host's idempotency key, a read-only tool, a slow tool that reports
 * progress and honours cancellation, and one resource.
 *
 *   node dist/examples/servers/notes-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/notes-server.js --http --port N [--data FILE]   (Streamable HTTP)
 *   node dist/examples/servers/notes-server.js --sse --port N [--data FILE]    (legacy HTTP+SSE)
 *
 * Logs go to stderr: in stdio mode stdout belongs to the protocol.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as lockfile from 'proper-lockfile';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/shared/meta';
import { hostAllowed, readJsonBody, sendJsonRpcError, streamableHttpHandler, type ServerSession } from './http-util';

function log(message: string): void {
  process.stderr.write(`notes-server[${process.pid}]: ${message}\n`);
}

// ------------------------------------------------------------------ storage

interface Note {
  id: string;
  text: string;
  createdAt: string;
}

interface StoreData {
  notes: Note[];
  /** Idempotency key → the note its first use created. Persisted, so a respawned server still dedupes. */
  idempotency: Record<string, Note>;
}

/**
 * Several processes write one file: every worker starts its own stdio copy of this server (the compose
 * stack's workers share /app/.data). A lock file next to the data (proper-lockfile: a `FILE.lock`
 * directory taken with mkdir, as the school store does) keeps their read-modify-write cycles apart.
 * It holds between processes of one host only: the example is single-host, never on a network share.
 */
const LOCK_STALE_MS = 10_000;
const LOCK_RETRIES = { retries: 400, factor: 1.3, minTimeout: 5, maxTimeout: 60, randomize: true };

class NotesStore {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string) {}

  /** The file locked against the other processes on this host while `op` reads and writes it. */
  private async acrossProcesses<T>(op: (stillHeld: () => void) => Promise<T>): Promise<T> {
    await mkdir(path.dirname(this.file), { recursive: true });
    let compromised: Error | undefined;
    const release = await lockfile.lock(this.file, {
      realpath: false, // the data file may not exist yet: the lock is on its name
      stale: LOCK_STALE_MS,
      retries: LOCK_RETRIES,
      onCompromised: (error) => {
        // The default throws from a timer and kills the process: refuse the write instead.
        compromised = error;
        log(`notes lock compromised: ${error.message}`);
      },
    });
    try {
      return await op(() => {
        if (compromised) throw new Error(`notes lock lost before writing (${compromised.message}); nothing was written`);
      });
    } finally {
      await release().catch((error: Error) => log(`notes unlock failed: ${error.message}`));
    }
  }

  /** One operation at a time in this process: read-modify-write must not interleave. */
  private exclusive<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => undefined);
    return run;
  }

  // Re-read on every operation so several server processes on one file see each other's notes.
  private async read(): Promise<StoreData> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { notes: [], idempotency: {} };
      throw error;
    }
    const data = JSON.parse(text) as Partial<StoreData>;
    return { notes: data.notes ?? [], idempotency: data.idempotency ?? {} };
  }

  /** Temp file + rename: a crash mid-write leaves the old file, never a truncated one. */
  private async write(data: StoreData): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.${randomUUID()}.tmp`;
    try {
      await writeFile(tmp, `${JSON.stringify(data, null, 2)}\n`, 'utf8');
      await rename(tmp, this.file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw error;
    }
  }

  add(text: string, idempotencyKey: string | undefined): Promise<{ note: Note; duplicate: boolean }> {
    return this.exclusive(() =>
      this.acrossProcesses(async (stillHeld) => {
        const data = await this.read();
        const previous = idempotencyKey ? data.idempotency[idempotencyKey] : undefined;
        if (previous) return { note: previous, duplicate: true };
        const note: Note = { id: randomUUID(), text, createdAt: new Date().toISOString() };
        data.notes.push(note);
        if (idempotencyKey) data.idempotency[idempotencyKey] = note;
        stillHeld();
        await this.write(data);
        return { note, duplicate: false };
      }),
    );
  }

  list(): Promise<Note[]> {
    return this.exclusive(async () => (await this.read()).notes);
  }
}

// ------------------------------------------------------------------ MCP server

const NoteShape = { id: z.string(), text: z.string(), createdAt: z.string() };

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function createNotesServer(store: NotesStore): McpServer {
  const server = new McpServer({ name: 'notes', version: '0.1.0' });

  server.registerTool(
    'add_note',
    {
      title: 'Add note',
      description: 'Saves a short text note. Retries with the same idempotency key do not add a second note.',
      inputSchema: { text: z.string().min(1).max(2000).describe('The note text') },
      outputSchema: NoteShape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ text }, extra) => {
      const rawKey = extra._meta?.[IDEMPOTENCY_KEY_META_KEY];
      const key = typeof rawKey === 'string' && rawKey !== '' ? rawKey : undefined;
      const traceparent = extra._meta?.['traceparent'];
      const { note, duplicate } = await store.add(text, key);
      // The host's trace, so this server's log lines can be joined to it.
      log(`add_note: note ${note.id}${duplicate ? ' (idempotency key seen before, unchanged)' : ''} traceparent=${typeof traceparent === 'string' ? traceparent : '-'}`);
      return {
        content: [{ type: 'text', text: `Saved note ${note.id}: ${note.text}` }],
        structuredContent: { ...note },
      };
    },
  );

  server.registerTool(
    'list_notes',
    {
      title: 'List notes',
      description: 'Lists all saved notes, oldest first.',
      inputSchema: {},
      outputSchema: { notes: z.array(z.object(NoteShape)) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const notes = await store.list();
      const text = notes.length === 0 ? 'No notes yet.' : notes.map((n) => `- ${n.text} (${n.id})`).join('\n');
      return { content: [{ type: 'text', text }], structuredContent: { notes } };
    },
  );

  server.registerTool(
    'slow_task',
    {
      title: 'Slow task',
      description: 'Waits the given number of seconds, reporting progress every 200 ms. Stops early when cancelled.',
      inputSchema: { seconds: z.number().min(0).max(30).describe('How long to run') },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ seconds }, extra) => {
      const progressToken = extra._meta?.progressToken;
      const totalMs = Math.round(seconds * 1000);
      const started = Date.now();
      let ticks = 0;
      while (!extra.signal.aborted && Date.now() - started < totalMs) {
        await sleep(Math.min(200, totalMs - (Date.now() - started)), extra.signal);
        if (extra.signal.aborted) break;
        ticks += 1;
        if (progressToken !== undefined) {
          const elapsed = Math.min(Date.now() - started, totalMs);
          await extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken, progress: elapsed, total: totalMs, message: `${(elapsed / 1000).toFixed(1)}s of ${seconds}s` },
            })
            .catch(() => undefined);
        }
      }
      if (extra.signal.aborted) {
        // Tests look for this line to prove the cancellation reached the server.
        log(`slow_task: cancelled after ${ticks} progress notifications`);
        return { content: [{ type: 'text', text: 'slow_task cancelled' }], isError: true };
      }
      return { content: [{ type: 'text', text: `slow_task finished after ${seconds}s (${ticks} progress notifications)` }] };
    },
  );

  server.registerResource(
    'all-notes',
    'notes://all',
    { title: 'All notes', description: 'Every saved note as a JSON array.', mimeType: 'application/json' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(await store.list(), null, 2) }],
    }),
  );

  return server;
}

// ------------------------------------------------------------------ command line

interface Options {
  mode: 'stdio' | 'http' | 'sse';
  port: number;
  dataFile: string;
}

function parseArgs(argv: readonly string[]): Options {
  let mode: Options['mode'] = 'stdio';
  let port = 0;
  let dataFile = process.env.NOTES_DATA_FILE || '.data/notes.json';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--stdio') mode = 'stdio';
    else if (arg === '--http') mode = 'http';
    else if (arg === '--sse') mode = 'sse';
    else if (arg === '--port') {
      port = Number(value());
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be 0..65535');
    } else if (arg === '--data') dataFile = value();
    else throw new Error(`unknown argument: ${arg}`);
  }
  return { mode, port, dataFile: path.resolve(dataFile) };
}

async function serveHttp(opts: Options, store: NotesStore): Promise<() => Promise<void>> {
  const sessions = new Map<string, ServerSession>();
  let port = opts.port;

  const handleStreamable = streamableHttpHandler(sessions, () => createNotesServer(store));

  const handleLegacySse = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    if (url.pathname === '/sse' || url.pathname === '/mcp') {
      // POST here is how a Streamable HTTP client probes; refusing it is what makes clients fall
      // back to this legacy transport.
      if (req.method !== 'GET') {
        res.writeHead(405, { allow: 'GET' }).end();
        return;
      }
      const transport = new SSEServerTransport('/messages', res);
      const server = createNotesServer(store);
      const id = transport.sessionId;
      sessions.set(id, { server, transport });
      res.on('close', () => {
        sessions.delete(id);
        void server.close();
      });
      await server.connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = sessions.get(url.searchParams.get('sessionId') ?? '')?.transport;
      if (!(transport instanceof SSEServerTransport)) return sendJsonRpcError(res, 404, -32001, 'Session not found');
      const body = await readJsonBody(req).catch((error: Error) => error);
      if (body instanceof Error) return sendJsonRpcError(res, 400, -32700, body.message);
      return await transport.handlePostMessage(req, res, body);
    }
    res.writeHead(404).end();
  };

  const httpServer = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const work = async (): Promise<void> => {
      if (!hostAllowed(req, port)) {
        res.writeHead(403).end('forbidden host');
        return;
      }
      if (opts.mode === 'sse') return await handleLegacySse(req, res, url);
      if (url.pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      await handleStreamable(req, res);
    };
    work().catch((error: unknown) => {
      log(`request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const address = httpServer.address();
  port = typeof address === 'object' && address ? address.port : opts.port;
  const endpoint = opts.mode === 'sse' ? 'sse' : 'mcp';
  // On stdout, once: scripts and tests wait for this line.
  process.stdout.write(`NOTES_SERVER_URL=http://127.0.0.1:${port}/${endpoint}\n`);
  log(`${opts.mode === 'sse' ? 'legacy HTTP+SSE' : 'Streamable HTTP'} on 127.0.0.1:${port}, data in ${opts.dataFile}`);

  return async () => {
    await Promise.allSettled([...sessions.values()].map((s) => s.server.close()));
    sessions.clear();
    httpServer.closeAllConnections();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
  };
}

async function serveStdio(store: NotesStore, onEnd: () => void): Promise<() => Promise<void>> {
  const server = createNotesServer(store);
  await server.connect(new StdioServerTransport());
  // The host closing our stdin is how it says goodbye (and how we avoid outliving a crashed host).
  process.stdin.once('end', onEnd);
  process.stdin.once('close', onEnd);
  log(`stdio, data in ${store.file}`);
  return async () => {
    await server.close();
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const store = new NotesStore(opts.dataFile);
  let stop: (() => Promise<void>) | undefined = undefined;
  let stopping = false;
  const shutdown = (why: string): void => {
    if (stopping) return;
    stopping = true;
    log(`shutting down (${why})`);
    // Never hang on the way out: a stuck close must not keep the process alive.
    setTimeout(() => process.exit(0), 2_000).unref();
    (stop?.() ?? Promise.resolve()).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  stop = opts.mode === 'stdio' ? await serveStdio(store, () => shutdown('stdin closed')) : await serveHttp(opts, store);
}

main().catch((error: unknown) => {
  log(`fatal: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
