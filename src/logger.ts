import pino from 'pino';

export type Logger = pino.Logger;

/**
 * Structured logs (pino). Redaction is a second line of defence: secrets should never reach a log
 * call in the first place.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['apiKey', '*.apiKey', 'headers.authorization', '*.headers.authorization', 'authorization', 'env', '*.env'],
      censor: '[redacted]',
    },
  });
}
