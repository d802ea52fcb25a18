/** Errors the API answers with: a status, a stable code for programs, a message for people. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** For 429 and 503: when to try again, sent as the `retry-after` header by the error handler. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const notFound = (what: string) => new HttpError(404, 'not_found', `${what} not found`);

/** The stable code for a 4xx raised by Fastify itself (body parsing, limits, media type). */
export function frameworkErrorCode(err: { code?: string; statusCode?: number }): string {
  if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
    return 'invalid_json';
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return 'payload_too_large';
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return 'unsupported_media_type';
  if (err.statusCode === 429) return 'rate_limited';
  return 'bad_request';
}
