import pino from 'pino';
import { traceFields } from './telemetry/context';
import { logContextFields } from './telemetry/log-context';

export type Logger = pino.Logger;

/**
 * Structured logs (pino). Redaction is a second line of defence: secrets should never reach a log
 * call in the first place. A line written inside an OpenTelemetry span carries its trace_id and
 * span_id; one written while an activity runs for a turn, its turnId, sessionId and userId.
 */
export function createLogger(name: string, level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    mixin: () => ({ ...logContextFields(), ...traceFields() }),
    redact: {
      paths: ['apiKey', '*.apiKey', 'headers.authorization', '*.headers.authorization', 'authorization', 'env', '*.env'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Query parameters whose values must never reach a log line (browsers put the WebSocket token there). */
/** Tokens in browser-opened URLs, and the OAuth callback's authorization code and state. */
const SECRET_QUERY_PARAMS = /([?&](?:access_token|token|code|state)=)[^&#]*/gi;

/** The URL with the values of secret query parameters replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[redacted]');
}

interface LoggedRequest {
  method?: string;
  url?: string;
  headers?: Record<string, unknown>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/**
 * A child of `logger` whose `req` serializer is fastify's own (method, url, version, host, remote
 * address and port) with secret query parameters redacted from the url. Fastify prefers the
 * instance's serializers over its defaults, so this one is used for "incoming request" lines.
 */
export function withSafeRequestLog(logger: Logger): Logger {
  return logger.child(
    {},
    {
      serializers: {
        req: (req: LoggedRequest) => ({
          method: req.method,
          url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
          version: req.headers?.['accept-version'],
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
    },
  );
}

type TemporalLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
type TemporalMeta = Record<string | symbol, unknown>;

const PINO_LEVEL = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * Warnings of the SDK that report an outcome the host asked for: an activity's completion arriving
 * after its turn was cancelled (or ended) finds no activity to complete. Logged at debug.
 */
const EXPECTED = [/Activity not found on completion/i];
/** The SDK's routine lifecycle lines, at debug: a start shows the host's own lines, not the SDK's. */
const ROUTINE = [/^Worker state changed$/, /^No Nexus services registered/];

/**
 * The Temporal SDK's logger (Runtime.install) on top of ours: the SDK's own messages, workflow `log`
 * calls (with workflowId, which is the turn id for turns) and activity logs come out as the same pino
 * JSON lines as everything else.
 */
export function temporalLogger(logger: Logger): {
  log(level: TemporalLevel, message: string, meta?: TemporalMeta): void;
  trace(message: string, meta?: TemporalMeta): void;
  debug(message: string, meta?: TemporalMeta): void;
  info(message: string, meta?: TemporalMeta): void;
  warn(message: string, meta?: TemporalMeta): void;
  error(message: string, meta?: TemporalMeta): void;
} {
  const sdk = logger.child({ component: 'temporal' });
  const log = (level: TemporalLevel, message: string, meta?: TemporalMeta): void => {
    // Symbol keys (the SDK's internal timestamp) are not data.
    const fields = meta ? Object.fromEntries(Object.entries(meta)) : {};
    const demoted = (level === 'WARN' && EXPECTED.some((m) => m.test(message))) || (level === 'INFO' && ROUTINE.some((m) => m.test(message)));
    sdk[PINO_LEVEL[demoted ? 'DEBUG' : level] ?? 'info'](fields, message);
  };
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
}
