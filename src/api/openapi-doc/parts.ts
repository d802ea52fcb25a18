/** The pieces of the OpenAPI document every route's schema is made of: schemas from zod, the error responses. */
import { z } from 'zod';
import { ErrorBody } from '../contract';

export type JsonSchema = Record<string, unknown>;

/** OpenAPI 3.0 Schema Objects from zod (zod 4 knows the 3.0 dialect: `nullable`, no `const`, ...). */
export const fromZod = (schema: z.ZodType, io: 'input' | 'output' = 'output'): JsonSchema =>
  z.toJSONSchema(schema, { target: 'openapi-3.0', io }) as JsonSchema;


export const ERROR_CODES: Record<number, string> = {
  400: 'The request is malformed: `invalid_request` (bad path, header, query or body; the message says which), `invalid_json`, `bad_request`, `bad_url`.',
  401: 'No valid bearer token: `missing_token`, `malformed_authorization`, `malformed_token`, `unsupported_alg`, `bad_signature`, `token_expired`, `token_not_yet_valid`, `wrong_issuer`, `wrong_audience`, `invalid_claims`.',
  404: '`not_found`: no such route, turn or pending approval, or it belongs to another user or tenant (indistinguishable by design).',
  409: 'Conflict with the current state.',
  413: '`payload_too_large`: the body is over 1 MiB, or the message text is over `MAX_MESSAGE_CHARS` characters.',
  414: '`uri_too_long`: a path parameter is over 256 characters.',
  415: '`unsupported_media_type`: send `application/json`.',
  431: '`header_fields_too_large`: the request line (path and query) and headers together are over 16 KiB.',
  429: '`rate_limited`: too many messages for this user or tenant in the current minute; or `token_budget_exhausted`: the day\'s token budget (host config `budgets`) is used up. Retry after `Retry-After` seconds.',
  503: '`unavailable`: the workflow service (Temporal) cannot be reached; try again shortly.',
};

export const errorBody = fromZod(ErrorBody);

/** Error responses for the given statuses; `overrides` replaces the standard description of a status. */
export function errors(statuses: number[], overrides: Record<number, string> = {}): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const status of statuses) {
    out[String(status)] = {
      ...errorBody,
      description: overrides[status] ?? ERROR_CODES[status] ?? 'Error',
      ...(status === 429
        ? { headers: { 'Retry-After': { type: 'integer', minimum: 1, description: 'Seconds until the next window.' } } }
        : {}),
    };
  }
  return out;
}

