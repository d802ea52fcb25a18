import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { IntentRule } from '../core/intents';
import { describeIssues, jsonErrorPosition } from '../shared/issues';
import { DEFAULT_MAX_MESSAGE_CHARS } from '../shared/message-limits';
import type { ContextSpec, TurnOptions } from '../shared/turn';
import type { SessionSettings } from '../shared/session';
import type { Policy } from '../shared/policy';
import { placeholderProblems } from './placeholders';
import { DEFAULT_CLAIM_CHECK_THRESHOLD } from '../security/claim-check';
import { HostConfigSchema, type HostConfig } from './host-schema';
import { PROVIDERS } from '../llm/provider';
import type { PayloadKeyring } from '../security/payload-codec';
import { PayloadKeyError, parsePayloadKeys, payloadKeyringFrom } from './payload-keys';

/**
 * Every setting comes from the environment (and the files it names), is validated here once, and
 * fails fast with a message that names the variable or field. Secrets stay in memory only.
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
/** An empty value counts as unset, as shells make it easy to export `VAR=`. */
const optionalText = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());

const EnvSchema = z.object({
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TASK_QUEUE: z.string().min(1).default('durable-mcp-host'),
  MCP_CONFIG: z.string().min(1).default('examples/mcp.json'),
  HOST_CONFIG: z.string().min(1).default('examples/host.json'),
  POLICY_FILE: z.string().min(1).default('examples/policy.json'),
  AUDIT_LOG: z.string().min(1).default('.data/audit.jsonl'),
  /**
   * Token usage per turn (budgets, GET /v1/admin/usage): written by the workers, read by the API. A
   * JSON Lines file on one host; with POSTGRES_URL the table dmh_usage instead.
   */
  USAGE_LOG: z.string().min(1).default('.data/usage.jsonl'),
  /**
   * Worker: where the audit chain lives. `file` (AUDIT_LOG; workers on one host) or `postgres` (table
   * dmh_audit in POSTGRES_URL, for workers on several machines).
   */
  AUDIT_STORE: z.enum(['file', 'postgres']).default('file'),
  AUDIT_REDACTION: z.string().min(1).optional(),
  TOKEN_SEAL_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  /**
   * Worker and API: where OAuth tokens of MCP servers with `auth` live, each file sealed with
   * TOKEN_SEAL_KEY (shared by the API, whose callback route writes into it, and the workers).
   */
  OAUTH_STORE_DIR: z.string().min(1).default('.data/oauth'),
  /**
   * The API's OAuth callback as the user's browser reaches it (registered with authorization servers
   * as the redirect URI); unset: http://API_HOST:API_PORT/v1/oauth/callback.
   */
  OAUTH_REDIRECT_URL: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL ending in /v1/oauth/callback' }).optional(),
  /** Shared by worker and API: authenticates live text pushed from LLM activities to the API. */
  LIVE_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * Worker: where to push live text deltas (the API's /internal/live), or the same route on several
   * replicas, comma-separated (tried in turn: src/live/transport.ts); unset (and no bus, see LIVE_VIA)
   * means no live text.
   */
  LIVE_PUSH_URL: optionalText
    .transform((v) => (v === undefined ? undefined : v.split(',').map((u) => u.trim()).filter((u) => u !== '')))
    .pipe(z.array(z.url({ protocol: /^https?$/, message: 'each must be an http(s) URL such as http://127.0.0.1:3000/internal/live' })).min(1, 'must name at least one URL').optional()),
  /**
   * Worker: how live text and reports leave it. `bus`: published on PostgreSQL (POSTGRES_URL) itself,
   * which every API replica LISTENs to; `http`: POSTed to LIVE_PUSH_URL; `auto` (default): `bus` when
   * POSTGRES_URL is set, else `http` (docs/decisions/0020-live-text-without-a-single-target.md).
   */
  LIVE_VIA: z.enum(['auto', 'bus', 'http']).default('auto'),
  /**
   * Worker: how often it reports its MCP servers' states to the API (beside LIVE_PUSH_URL, at
   * .../internal/workers), which /healthz answers from; a worker silent for three intervals drops out.
   */
  WORKER_REPORT_MS: z.coerce.number().int().min(100, 'must be at least 100 (milliseconds)').max(3_600_000).default(10_000),
  /**
   * Worker liveness (docs/decisions/0028-worker-liveness.md): without POSTGRES_URL, the directory the
   * workers of one host share to see each other die; how often each worker looks for dead peers.
   */
  WORKER_LIVENESS_DIR: z.string().min(1).default('.data/workers'),
  WORKER_LIVENESS_MS: z.coerce.number().int().min(50, 'must be at least 50 (milliseconds)').max(60_000).default(250),
  /**
   * Worker: how many workflow runs it keeps in its sticky cache (the SDK's maxCachedWorkflows); each
   * costs memory in the workflow thread. Unset: the SDK's default, sized to the machine's memory.
   * A run not cached is replayed from its history at its next task; 0 turns the cache off.
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce
    .number()
    .int('must be a whole number')
    .max(100_000)
    .refine((n) => n === 0 || n >= 2, 'must be 0 (no cache) or at least 2')
    .optional(),
  /**
   * PostgreSQL shared by the API replicas (live text across replicas, shared rate limits) and, with
   * the workers, the OAuth token store; e.g. postgres://user:password@db:5432/dmh. Unset: one API
   * process, state in memory, OAuth tokens in sealed files (OAUTH_STORE_DIR).
   */
  POSTGRES_URL: z
    .url({ protocol: /^postgres(ql)?$/, message: 'must be a postgres:// URL such as postgres://user:password@127.0.0.1:5432/dmh' })
    .optional(),
  RATE_LIMIT_USER_PER_MIN: positiveInt.default(60),
  RATE_LIMIT_TENANT_PER_MIN: positiveInt.default(600),
  LLM_BASE_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL such as http://127.0.0.1:11434/v1' })
    .optional(),
  /**
   * Worker: the default model's provider: `openai` (any OpenAI-compatible endpoint, the default),
   * `anthropic` (Messages API) or `gemini` (Gemini API); see src/config/models.ts.
   */
  LLM_PROVIDER: z.enum(PROVIDERS, { message: `must be one of ${PROVIDERS.join(', ')}` }).optional(),
  /** Required with LLM_BASE_URL or LLM_PROVIDER: no model name is sent silently in the user's name. A name in the host config's `models` also does. */
  LLM_MODEL: optionalText,
  LLM_API_KEY: z.string().default(''),
  LLM_TIMEOUT_MS: positiveInt.default(120_000),
  /** Worker: `on` checks GET {LLM_BASE_URL}/models at start (URL, key, LLM_MODEL) and stops on a failure. */
  LLM_PROBE: z.enum(['on', 'off']).default('off'),
  API_HOST: z.string().min(1).default('127.0.0.1'),
  API_PORT: port.default(3000),
  /** Worker: serve Prometheus metrics on this port (GET /metrics); unset: no metrics endpoint. */
  WORKER_METRICS_PORT: port.optional(),
  WORKER_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** API: GET /metrics answers callers presenting this bearer token; unset: no metrics endpoint. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Where the console links a turn: the Temporal web UI (npm start sets it to the dev server's UI). */
  TEMPORAL_UI_URL: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL such as http://127.0.0.1:8233' }).optional(),
  /**
   * API: a demo model rules file; GET /v1/suggestions offers its scripts' examples (npm start sets it
   * when it runs the demo model). Unset: no suggestions (a real model's sentences are not known).
   */
  SUGGESTIONS_RULES: z.string().min(1).optional(),
  /** `on` (npm start's local mode only): the console offers one-click sign-in as the demo users. */
  CONSOLE_DEMO_USERS: z.enum(['on', 'off']).default('off'),
  /** Browser origins allowed to call the API (CORS), comma-separated; unset: same origin only. */
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((o) => o.trim()).filter((o) => o !== ''))
    .pipe(z.array(z.string().regex(/^https?:\/\/[^/\s?#]+$/, 'each origin must be scheme://host[:port], e.g. http://localhost:5173, without a path'))),
  SSE_POLL_MS: positiveInt.default(50),
  /** Worker and API: how often to check the MCP config, policy and host config for edits (hot reload); 0: only on SIGHUP. */
  CONFIG_POLL_MS: z.coerce.number().int().nonnegative().default(1_000),
  CATALOG_CACHE_MS: z.coerce.number().int().nonnegative().default(5_000),
  MAX_MESSAGE_CHARS: positiveInt.default(DEFAULT_MAX_MESSAGE_CHARS),
  MCP_BREAKER_THRESHOLD: positiveInt.default(5),
  MCP_BREAKER_COOLDOWN_MS: positiveInt.default(30_000),
  RESOURCE_CACHE_TTL_MS: z.coerce.number().int().nonnegative().default(30_000),
  /** The longest a 2026-07-28 server's `ttlMs` keeps a resource read fresh (decision 0039); 0: the hints' lifetimes are not used. */
  RESOURCE_CACHE_MAX_TTL_MS: z.coerce.number().int().nonnegative().default(300_000),
  RESOURCE_MAX_STALE_MS: z.coerce.number().int().nonnegative().default(3_600_000),
  ACTIVITY_HEARTBEAT_MS: positiveInt.default(5_000),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** API authentication (checked as a set by loadAuthConfig in src/api/auth.ts): one of the two key sources. */
  JWT_SECRET: optionalText,
  JWT_JWKS_URL: optionalText,
  JWT_ISSUER: optionalText,
  JWT_AUDIENCE: optionalText,
  /** API: `off` does not serve the host as an MCP server at /mcp (src/api/mcp-server). */
  MCP_ENDPOINT: z.enum(['on', 'off']).default('on'),
  /**
   * API: host names /mcp answers to, comma-separated (the DNS-rebinding guard checks Host and Origin
   * against them); default: loopback names only. Add the name clients use when the API is not local.
   */
  MCP_ALLOWED_HOSTS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((o) => o.trim()).filter((o) => o !== ''))
    .pipe(z.array(z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9.-]+)$/, 'each entry must be a host name without scheme or port, e.g. mcp.example.com'))),
  /** API: the public URL of /mcp behind a proxy (protected resource metadata); unset: from the request. */
  MCP_RESOURCE_URL: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL ending in /mcp' }).optional(),
  /**
   * API: issuer URLs of the authorization servers that mint the API's tokens, comma-separated, named in
   * /mcp's protected resource metadata; default: JWT_ISSUER when it is a URL.
   */
  MCP_AUTHORIZATION_SERVERS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((o) => o.trim()).filter((o) => o !== ''))
    .pipe(z.array(z.url({ protocol: /^https?$/, message: 'each entry must be an issuer URL such as https://auth.example.com' }))),
  /**
   * Worker, API and every Temporal client: payload encryption keys, `id:base64key` entries separated by
   * commas, the first one encrypting, all of them decrypting (src/config/payload-keys.ts). Unset (and
   * no PAYLOAD_KEY_FILE): payloads are stored in clear.
   */
  PAYLOAD_KEYS: optionalText,
  /** The same keys from a file (one entry a line, `#` comments); one of the two, not both. */
  PAYLOAD_KEY_FILE: optionalText,
  /**
   * Worker, API and every Temporal client: payloads larger than this many bytes (serialized, after
   * encryption) are stored outside Temporal's history by reference (the claim check,
   * docs/decisions/0022-claim-check.md). At most 1.5 MiB: Temporal refuses payloads over 2 MiB.
   */
  CLAIM_CHECK_THRESHOLD_BYTES: z.coerce
    .number()
    .int()
    .min(1_024, 'must be at least 1024 (bytes)')
    .max(1_572_864, 'must be at most 1572864 (1.5 MiB; Temporal refuses payloads over 2 MiB)')
    .default(DEFAULT_CLAIM_CHECK_THRESHOLD),
  /** Where payloads stored by reference live without POSTGRES_URL (shared by the worker and the API on one host). */
  CLAIM_CHECK_DIR: z.string().min(1).default('.data/claim-check'),
  /**
   * Worker: blobs unused for this many hours are removed; unset: the namespace's retention, read
   * from Temporal at each sweep.
   */
  CLAIM_CHECK_RETENTION_HOURS: z.coerce.number().int().min(1, 'must be at least 1 (hour)').max(87_600, 'must be at most 87600 (10 years)').optional(),
  /** Worker: how often it sweeps the claim-check store. */
  CLAIM_CHECK_SWEEP_MS: z.coerce.number().int().min(1_000, 'must be at least 1000 (milliseconds)').max(86_400_000).default(3_600_000),
  /** Worker: `off` bundles the workflow code at start instead of loading the prebuilt bundle (development). */
  WORKFLOW_BUNDLE: z.enum(['prebuilt', 'off']).default('prebuilt'),
});
export type EnvConfig = z.infer<typeof EnvSchema>;

const CheckedEnvSchema = EnvSchema.superRefine((env, ctx) => {
  // A secret copied from an example file is public: refuse to start with it (src/config/placeholders.ts).
  for (const { variable, message } of placeholderProblems(env)) ctx.addIssue({ code: 'custom', path: [variable], message });
  if (env.LLM_BASE_URL && !env.LLM_MODEL) {
    ctx.addIssue({ code: 'custom', path: ['LLM_MODEL'], message: `required when LLM_BASE_URL is set (the model to ask at ${env.LLM_BASE_URL})` });
  } else if (env.LLM_PROVIDER && !env.LLM_MODEL) {
    ctx.addIssue({ code: 'custom', path: ['LLM_MODEL'], message: `required when LLM_PROVIDER is set (the ${env.LLM_PROVIDER} model to ask)` });
  }
  if (env.PAYLOAD_KEYS && env.PAYLOAD_KEY_FILE) {
    ctx.addIssue({ code: 'custom', path: ['PAYLOAD_KEY_FILE'], message: 'set PAYLOAD_KEYS or PAYLOAD_KEY_FILE, not both' });
  } else if (env.PAYLOAD_KEYS) {
    try {
      parsePayloadKeys(env.PAYLOAD_KEYS, 'PAYLOAD_KEYS');
    } catch (err) {
      // The message names the entry or key id, never the key.
      ctx.addIssue({ code: 'custom', path: ['PAYLOAD_KEYS'], message: (err as Error).message.replace(/^PAYLOAD_KEYS: /, '') });
    }
  }
  if (env.LIVE_VIA === 'bus' && !env.POSTGRES_URL) {
    ctx.addIssue({ code: 'custom', path: ['LIVE_VIA'], message: 'bus needs POSTGRES_URL (the database the API replicas LISTEN on)' });
  }
});

export function formatZodError(source: string, error: z.ZodError): string {
  return describeIssues(error.issues, '')
    .map((line) => `${source}: ${line}`)
    .join('\n');
}

export function loadEnvConfig(env: NodeJS.ProcessEnv = process.env): EnvConfig {
  const parsed = CheckedEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(formatZodError('environment', parsed.error));
  return parsed.data;
}

/** The payload keys the environment configures (PAYLOAD_KEYS or PAYLOAD_KEY_FILE), or undefined: no encryption. */
export function loadPayloadKeyring(env: Pick<EnvConfig, 'PAYLOAD_KEYS' | 'PAYLOAD_KEY_FILE'>): PayloadKeyring | undefined {
  try {
    return payloadKeyringFrom(env);
  } catch (err) {
    if (err instanceof PayloadKeyError) throw new ConfigError(err.message);
    throw err;
  }
}

export function loadHostConfig(file: string): HostConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read host config: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file}: host config is not valid JSON${jsonErrorPosition(text, err)}`);
  }
  const parsed = HostConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatZodError(path.basename(file), parsed.error));
  return parsed.data;
}

export function turnOptionsFrom(host: HostConfig): TurnOptions {
  return {
    maxSteps: host.maxSteps,
    systemPrompt: host.systemPrompt,
    context: host.context,
    llmRetry: host.llmRetry,
    mcpRetry: host.mcpRetry,
    maxToolResultChars: host.maxToolResultChars,
    timeouts: host.timeouts,
  };
}

export function sessionSettingsFrom(host: HostConfig): SessionSettings {
  const s = host.sessions;
  return {
    history: { maxTokenCount: s.maxTokenCount, summarizationThreshold: s.summarizationThreshold, retainNewestMessages: s.retainNewestMessages },
    maxQueuedTurns: s.maxQueuedTurns,
    transcriptLimit: s.transcriptLimit,
    maxTurnsPerRun: s.maxTurnsPerRun,
    turnCheckMs: s.turnCheckMs,
  };
}

/** What the API hands every new turn and session: the host config's settings and the tool policy. */
export interface TurnSettings {
  policy: Policy;
  turnOptions: TurnOptions;
  /** Context to gather per caller role; other roles get turnOptions.context. */
  contextByRole: Record<string, ContextSpec>;
  /** Context to gather by what the message says, beside the role's (src/core/intents.ts); absent: none. */
  intents?: IntentRule[];
  /** The model per caller role, by its name in the host config's `models`; other roles: the worker's default. Absent: none. */
  modelByRole?: Record<string, string>;
  sessionSettings: SessionSettings;
}

export function turnSettingsFrom(host: HostConfig, policy: Policy): TurnSettings {
  return {
    policy,
    turnOptions: turnOptionsFrom(host),
    contextByRole: host.contextByRole,
    intents: host.intents,
    modelByRole: host.modelByRole,
    sessionSettings: sessionSettingsFrom(host),
  };
}

/** The path of the API's OAuth callback route (the redirect URI's path). */
export const OAUTH_CALLBACK_PATH = '/v1/oauth/callback';

/** Where authorization servers send the user back: OAUTH_REDIRECT_URL, or the API's own address. */
export function oauthRedirectUrl(env: Pick<EnvConfig, 'OAUTH_REDIRECT_URL' | 'API_HOST' | 'API_PORT'>): string {
  if (env.OAUTH_REDIRECT_URL) return env.OAUTH_REDIRECT_URL;
  const host = env.API_HOST === '0.0.0.0' || env.API_HOST === '::' ? '127.0.0.1' : env.API_HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${env.API_PORT}${OAUTH_CALLBACK_PATH}`;
}

/** The SDK's default for the workflow tasks a worker runs at once. */
const SDK_WORKFLOW_TASK_SLOTS = 40;

/**
 * The worker's sticky-cache options from WORKER_MAX_CACHED_WORKFLOWS: a cache smaller than the SDK's
 * 40 workflow task slots brings the slots down to it (the SDK requires that, and would warn).
 */
export function workflowCacheOptions(max: number | undefined): { maxCachedWorkflows?: number; maxConcurrentWorkflowTaskExecutions?: number } {
  if (max === undefined) return {};
  if (max === 0 || max >= SDK_WORKFLOW_TASK_SLOTS) return { maxCachedWorkflows: max };
  return { maxCachedWorkflows: max, maxConcurrentWorkflowTaskExecutions: max };
}
