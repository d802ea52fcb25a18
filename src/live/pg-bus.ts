/**
 * Live text across API replicas: a worker publishes its chunks with PostgreSQL NOTIFY itself
 * (`busLiveTransport`, when it shares the replicas' database), or pushes them to whichever replica it
 * reaches, which publishes them the same way (`notifyChunks` is the one copy of that mechanism); every
 * replica LISTENs and feeds its own hub. Any replica can then serve any turn's stream, and no replica
 * stands between a worker and the others (docs/decisions/0020-live-text-without-a-single-target.md).
 *
 * Limits (docs/decisions/0009-shared-state-on-postgres.md): a NOTIFY payload is at most 8000 bytes, so
 * batches are cut to fit, an oversized delta is split at offsets and an oversized durable event is
 * sent as a `poll` hint (streams read it from Temporal); a replica publishes one batch at a
 * time, in the order the worker pushed them, and `publish` resolves only once PostgreSQL took it, which
 * the ingest route waits for before answering (so order holds across replicas too); delivery is at
 * most once. While a replica's listening connection is down it misses chunks (NOTIFYs committed before
 * its LISTEN is back are never delivered to it): its streams show a gap until the durable `text` event,
 * which is authoritative. It reconnects on its own, with a bounded backoff. A connection that dies
 * silently (a partition: no reset, no FATAL) is found by a periodic round trip on it (a liveness check).
 */
import { Client, type Pool } from 'pg';
import { type LiveChunk, LiveBatchSchema } from './chunk';
import type { LiveLogger } from './chunk';
import type { LiveTextHub } from './hub';
import type { LiveTransport } from './transport';

/** Below PostgreSQL's 8000-byte NOTIFY payload limit, with room for the envelope. */
export const MAX_PAYLOAD_BYTES = 7_800;
export const DEFAULT_CHANNEL = 'dmh_live';
/** The listening connection's name in pg_stat_activity, so an operator can tell it from pool connections. */
export const LISTEN_APPLICATION_NAME = 'dmh-live-listen';
/** Longest wait between two attempts to listen again: a replica is never deaf much longer than its database is down. */
export const MAX_RECONNECT_MS = 10_000;
/** How often the listening connection proves it is alive, and how long it has to answer. */
export const DEFAULT_CHECK_MS = 30_000;
export const DEFAULT_CHECK_TIMEOUT_MS = 5_000;

export interface PgLiveBusOptions {
  /** Publishes (pg_notify) through the pool. */
  pool: Pick<Pool, 'query'>;
  /** The listening connection is a client of its own (LISTEN holds a connection). */
  connectionString: string;
  /** `interrupted` is told when the listening connection is lost and when it listens again: chunks may be missing. */
  hub: Pick<LiveTextHub, 'ingest'> & Partial<Pick<LiveTextHub, 'interrupted'>>;
  logger: LiveLogger & { info?(obj: Record<string, unknown>, msg?: string): void };
  channel?: string;
  /** Wait before the first attempt to listen again (500 ms); doubles after each failed attempt, up to MAX_RECONNECT_MS. */
  reconnectMs?: number;
  /**
   * Every `checkMs` (DEFAULT_CHECK_MS) the listening connection runs `SELECT 1`; no answer within
   * `checkTimeoutMs` (DEFAULT_CHECK_TIMEOUT_MS), or an error, counts as a lost connection. A LISTEN
   * only receives, so without it a silently dead connection would never be noticed.
   */
  checkMs?: number;
  checkTimeoutMs?: number;
}

export interface LiveBus {
  /**
   * Sends chunks to every replica's hub; resolves once PostgreSQL has taken every NOTIFY (committed).
   * If PostgreSQL refuses, this replica's hub gets them at least, and the promise rejects.
   */
  publish(chunks: readonly LiveChunk[]): Promise<void>;
  /** Resolves once the listening connection is up (the first time). */
  ready: Promise<void>;
  /** Whether the listening connection is up now, and since when it is down (readiness, /healthz/ready). */
  listening(): { ok: boolean; downSinceMs?: number };
  close(): Promise<void>;
}

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
const encode = (chunks: readonly LiveChunk[]): string => JSON.stringify({ chunks });

/**
 * A chunk as pieces that each fit one payload: a delta too large is split into consecutive deltas (on
 * code points, offsets in UTF-16 units); an event too large becomes a `poll` hint (its id), never split
 * or lost, so every hub sees the hole and its streams read that event from Temporal; a memory too large
 * is left out.
 */
function fit(c: LiveChunk): LiveChunk[] {
  if (bytes(encode([c])) <= MAX_PAYLOAD_BYTES) return [c];
  if (c.kind === 'event' && c.event) return [{ turnId: c.turnId, step: c.step, attempt: c.attempt, kind: 'poll', offset: c.event.id, text: '' }];
  // A memory handed on is a shortcut: without it the next turn reads the memory from Temporal.
  if (c.kind === 'memory') return [];
  if (c.kind !== 'delta') return [c];
  const points = Array.from(c.text);
  const half = Math.ceil(points.length / 2);
  const first = points.slice(0, half).join('');
  return [...fit({ ...c, text: first }), ...fit({ ...c, offset: c.offset + first.length, text: points.slice(half).join('') })];
}

/** The chunks as NOTIFY payloads, in order, each under MAX_PAYLOAD_BYTES. */
export function toPayloads(chunks: readonly LiveChunk[]): string[] {
  const payloads: string[] = [];
  let batch: LiveChunk[] = [];
  for (const piece of chunks.flatMap(fit)) {
    if (batch.length && bytes(encode([...batch, piece])) > MAX_PAYLOAD_BYTES) {
      payloads.push(encode(batch));
      batch = [];
    }
    batch.push(piece);
  }
  if (batch.length) payloads.push(encode(batch));
  return payloads;
}

/**
 * Publishes chunks on `channel`, one NOTIFY per payload, in order; resolves once PostgreSQL took them
 * all. The replicas' bus and the workers' bus transport both send through here.
 */
export async function notifyChunks(pool: Pick<Pool, 'query'>, channel: string, chunks: readonly LiveChunk[]): Promise<void> {
  for (const payload of toPayloads(chunks)) await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

/** A worker's live text straight onto the bus (see ./transport.ts): every replica's hub hears it. */
export function busLiveTransport(opts: { pool: Pick<Pool, 'query'>; channel?: string; describe?: string }): LiveTransport {
  const channel = opts.channel ?? DEFAULT_CHANNEL;
  // Errors name the failure, never the connection string (it holds the password).
  const target = opts.describe ?? `postgres NOTIFY ${channel}`;
  return {
    target: () => target,
    async send(chunks) {
      try {
        await notifyChunks(opts.pool, channel, chunks);
      } catch (err) {
        throw new Error(err instanceof Error ? err.message : String(err));
      }
    },
  };
}

export function createPgLiveBus(opts: PgLiveBusOptions): LiveBus {
  const channel = opts.channel ?? DEFAULT_CHANNEL;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`live bus: channel ${channel} must be a lower-case SQL identifier`);
  let closed = false;
  let listener: Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  /** The current listener's liveness checks (none while it is down). */
  let checkTimer: NodeJS.Timeout | undefined;
  const firstDelay = opts.reconnectMs ?? 500;
  let delay = firstDelay;
  const checkMs = opts.checkMs ?? DEFAULT_CHECK_MS;
  const checkTimeoutMs = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  /** When the listening connection was lost (0 while it is up): the log says how long this replica was deaf. */
  let lostAt = 0;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  // Errors are logged by message only, never with the connection string (it holds the password).
  const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  const tellHub = (): void => {
    try {
      opts.hub.interrupted?.();
    } catch {
      // The hub's listeners are not the bus's concern.
    }
  };

  const onNotification = (msg: { channel: string; payload?: string }): void => {
    if (msg.channel !== channel || !msg.payload) return;
    let parsed: ReturnType<typeof LiveBatchSchema.safeParse>;
    try {
      parsed = LiveBatchSchema.safeParse(JSON.parse(msg.payload));
    } catch {
      opts.logger.warn({ channel }, 'live bus: a payload that is not JSON was dropped');
      return;
    }
    if (!parsed.success) {
      opts.logger.warn({ channel }, 'live bus: a payload that is not a live batch was dropped');
      return;
    }
    opts.hub.ingest(parsed.data.chunks);
  };

  const listen = async (): Promise<void> => {
    const client = new Client({ connectionString: opts.connectionString, application_name: LISTEN_APPLICATION_NAME });
    client.on('notification', onNotification);
    // pg reports one loss up to twice (the server's FATAL, then the socket's end), and an 'error' without
    // a handler would crash the process: only the first report of the current listener counts. Failures
    // before it listens reject connect() or LISTEN instead.
    const lost = (why: string): void => {
      if (listener !== client) return;
      listener = undefined;
      lostAt = Date.now();
      clearInterval(checkTimer);
      opts.logger.warn({ channel, err: why, retryInMs: delay }, 'live bus: listening connection lost; this replica misses live text until it listens again');
      tellHub();
      // Destroyed, not ended: a graceful end waits for the server's answer, which a dead link never brings.
      client.connection.stream.destroy();
      schedule();
    };
    // One check at a time: a check still waiting is the one that will time out.
    let checking = false;
    const check = async (): Promise<void> => {
      if (checking || listener !== client) return;
      checking = true;
      let deadline: NodeJS.Timeout | undefined;
      try {
        const timedOut = new Promise<never>((_, reject) => {
          deadline = setTimeout(() => reject(new Error(`liveness check: no answer within ${checkTimeoutMs} ms`)), checkTimeoutMs);
        });
        await Promise.race([client.query('SELECT 1'), timedOut]);
      } catch (err) {
        lost(reason(err));
      } finally {
        clearTimeout(deadline);
        checking = false;
      }
    };
    client.on('error', (err) => lost(err.message));
    client.on('end', () => lost('the connection ended'));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      void client.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      await client.end().catch(() => undefined);
      return;
    }
    listener = client;
    checkTimer = setInterval(() => void check(), checkMs);
    checkTimer.unref();
    delay = firstDelay;
    if (lostAt) {
      opts.logger.info?.({ channel, deafMs: Date.now() - lostAt }, 'live bus: listening again');
      // What was published while deaf never comes: followers read their turns now.
      tellHub();
    }
    lostAt = 0;
    markReady();
  };

  const retry = (err: unknown): void => {
    opts.logger.warn({ channel, err: reason(err), retryInMs: delay }, 'live bus: cannot listen; retrying');
    schedule();
  };

  /** The next attempt after `delay`; each one that follows without success waits twice as long, capped. */
  function schedule(): void {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      listen().catch(retry);
    }, delay);
    retryTimer.unref();
    delay = Math.min(delay * 2, MAX_RECONNECT_MS);
  }

  listen().catch(retry);

  // One publish at a time, in arrival order: concurrent NOTIFYs on different pool connections could
  // commit out of order, and the hubs drop a chunk that would leave a hole.
  let queue: Promise<void> = Promise.resolve();
  const send = async (chunks: readonly LiveChunk[]): Promise<void> => {
    try {
      await notifyChunks(opts.pool, channel, chunks);
    } catch (err) {
      opts.logger.warn({ channel, err: reason(err) }, 'live bus: publish failed; only this replica gets the text');
      opts.hub.ingest(chunks);
      // The ingest route answers 503: the worker's publisher counts the batch dropped and backs off.
      throw err;
    }
  };

  return {
    ready,
    listening: () => (listener ? { ok: true } : { ok: false, ...(lostAt ? { downSinceMs: Date.now() - lostAt } : {}) }),
    publish(chunks) {
      const sent = queue.then(() => send(chunks));
      // A failed publish must not stop the ones queued behind it.
      queue = sent.catch(() => undefined);
      return sent;
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      clearInterval(checkTimer);
      const client = listener;
      listener = undefined;
      if (!client) return;
      // A graceful end waits for the server; across a dead link it would never come. Bounded by the
      // liveness deadline, then the socket is destroyed, so shutting down never hangs.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          client.connection.stream.destroy();
          resolve();
        }, checkTimeoutMs);
        timer.unref();
      });
      await Promise.race([client.end().catch(() => undefined), gaveUp]);
      clearTimeout(timer);
    },
  };
}
