/**
 * The zod schemas of one `mcpServers` entry as written in the file (config.ts resolves and checks
 * what they accept), the fields each part knows (anything else is warned about, not refused), and
 * the wording of a schema's complaint.
 */
import { z } from 'zod';
import { MAX_MAX_MESSAGE_BYTES, MIN_MAX_MESSAGE_BYTES } from './transport-limits';

// setTimeout silently treats anything above 2^31-1 as 1 ms.
const MAX_TIMEOUT_MS = 2_147_483_647;
const timeoutMs = z.number().int().positive().max(MAX_TIMEOUT_MS).optional();

export const TimeoutsSchema = z.object({ connectMs: timeoutMs, callMs: timeoutMs, callTotalMs: timeoutMs, listMs: timeoutMs });

const commonFields = {
  timeouts: TimeoutsSchema.optional(),
  /** The largest message the server may send (a tool result, a listing); larger ones drop the connection. */
  maxMessageBytes: z.number().int().min(MIN_MAX_MESSAGE_BYTES).max(MAX_MAX_MESSAGE_BYTES).optional(),
  disabled: z.boolean().optional(),
  description: z.string().optional(),
  /** Directories (relative to the config file) or `file://` URIs the server may use. */
  roots: z.array(z.string().min(1)).max(64).optional(),
  honoursIdempotencyKey: z.boolean().optional(),
  readOnlyTools: z.array(z.string().regex(/^[a-zA-Z0-9_.\/-]+\*?$/, 'a tool name, or a prefix ending in *')).max(1024).optional(),
  /** The MCP revision spoken to the server: `auto` (default) discovers it (src/mcp/session-select.ts). */
  protocol: z.enum(['auto', '2025-11-25', '2026-07-28']).optional(),
};

export const StdioEntrySchema = z.object({
  // Claude Code / VS Code style configs carry a `type`; accepted so those files load unchanged.
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
  ...commonFields,
});

const OAuthSchema = z.object({
  type: z.literal('oauth'),
  /** Asked for when neither the server's challenge nor its metadata names scopes. */
  scope: z.string().min(1).optional(),
  /** A client registered beforehand; without one, the client registers itself (or uses clientMetadataUrl). */
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  /** An https URL serving this host's client metadata document, used as its client_id where supported. */
  clientMetadataUrl: z.string().min(1).optional(),
});
const ClientCredentialsSchema = z.object({
  type: z.literal('client_credentials'),
  clientId: z.string().min(1),
  /** Exactly one of clientSecret and privateKey (PEM, for private_key_jwt). */
  clientSecret: z.string().min(1).optional(),
  privateKey: z.string().min(1).optional(),
  /** The JWT signing algorithm for privateKey (default ES256). */
  algorithm: z.string().min(1).optional(),
  scope: z.string().min(1).optional(),
});
export const AuthSchema = z.discriminatedUnion('type', [OAuthSchema, ClientCredentialsSchema]);

export const HttpEntrySchema = z.object({
  type: z.enum(['http', 'streamable-http', 'sse']).optional(),
  url: z.string().min(1),
  headers: z.record(z.string(), z.string()).optional(),
  transport: z.enum(['auto', 'streamable-http', 'sse']).optional(),
  /** Send the calling user's bearer token to this server. Off unless set: a token is a credential. */
  forwardUserToken: z.boolean().optional(),
  auth: AuthSchema.optional(),
  ...commonFields,
});

export const KNOWN_KEYS = {
  stdio: new Set(Object.keys(StdioEntrySchema.shape)),
  oauth: new Set(Object.keys(OAuthSchema.shape)),
  client_credentials: new Set(Object.keys(ClientCredentialsSchema.shape)),
  http: new Set(Object.keys(HttpEntrySchema.shape)),
  timeouts: new Set(Object.keys(TimeoutsSchema.shape)),
};


export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** One zod issue as a short phrase. Never echoes the input value: it may be a secret. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      const expected = issue.expected === 'record' ? 'object' : issue.expected === 'int' ? 'integer' : issue.expected;
      if (!('input' in issue) || issue.input === undefined) return `expected ${expected} (missing)`;
      return `expected ${expected}, got ${kindOf(issue.input)}`;
    }
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return `must be ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      return `must be ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return issue.message;
  }
}
