/**
 * `npm start`'s one log stream. Every line is a pino JSON object: the supervisor's own (name `up`),
 * the worker's and the API's as they wrote them, and the other children's (the Temporal dev server's
 * JSON, the demo model's and the payments server's plain lines) turned into the same shape with the
 * child's name. On a terminal (or with LOG_FORMAT=pretty) the same objects are printed by pino-pretty
 * instead; LOG_FORMAT=json keeps JSON on a terminal too.
 */
import pino from 'pino';
import { prettyFactory } from 'pino-pretty';

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, warning: 40, error: 50, fatal: 60, panic: 60 };

export interface SupervisorLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /**
   * A line a child printed, in the stream under its name. With `demote` returning true (the
   * supervisor is stopping everything), the child's lines count as debug: the embedded dev server
   * reports its own shutdown (canceled contexts, closed connections) as warnings and errors.
   */
  child(name: string, demote?: () => boolean): (line: string) => void;
  /** Whether lines are rendered for people (a terminal) rather than as JSON. */
  readonly pretty: boolean;
}

export function createSupervisorLog(opts: { format?: string; level?: string; isTty?: boolean; write?: (line: string) => void } = {}): SupervisorLog {
  const write = opts.write ?? ((line: string) => void process.stdout.write(line));
  const pretty = opts.format === 'pretty' || (opts.format !== 'json' && (opts.isTty ?? process.stdout.isTTY === true));
  const render = pretty ? prettyFactory({ colorize: opts.isTty ?? process.stdout.isTTY === true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true }) : undefined;
  const emit = (obj: Record<string, unknown>): void => write(render ? render(obj) : `${JSON.stringify(obj)}\n`);
  const minLevel = LEVELS[opts.level ?? 'info'] ?? 30;
  const own = pino(
    { name: 'up', level: opts.level ?? 'info', base: { pid: process.pid } },
    { write: (line: string) => emit(JSON.parse(line) as Record<string, unknown>) },
  );

  /** A child's line as a pino object: its JSON normalized (numeric level, msg), or the plain text. */
  const normalize = (name: string, line: string): Record<string, unknown> => {
    const trimmed = line.trim();
    if (trimmed.startsWith('{')) {
      try {
        const obj = JSON.parse(trimmed) as Record<string, unknown>;
        const level = typeof obj['level'] === 'number' ? obj['level'] : LEVELS[String(obj['level'] ?? 'info').toLowerCase()] ?? 30;
        const msg = obj['msg'] ?? obj['message'];
        const time = typeof obj['time'] === 'number' ? obj['time'] : Date.now();
        return { ...obj, level, time, name: obj['name'] ?? name, ...(msg !== undefined ? { msg } : {}) };
      } catch {
        // Not JSON after all: a plain line.
      }
    }
    return { level: 30, time: Date.now(), name, msg: line };
  };

  return {
    pretty,
    info: (msg, fields = {}) => own.info(fields, msg),
    warn: (msg, fields = {}) => own.warn(fields, msg),
    error: (msg, fields = {}) => own.error(fields, msg),
    child: (name, demote) => (line) => {
      if (line.trim() === '') return;
      const obj = normalize(name, line);
      if (demote?.()) {
        obj['level'] = LEVELS['debug'];
        obj['duringShutdown'] = true;
      }
      if ((obj['level'] as number) >= minLevel) emit(obj);
    },
  };
}
