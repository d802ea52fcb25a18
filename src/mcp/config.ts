/**
 * The MCP server config file: the `mcpServers` shape users already have from Claude Desktop /
 * Cursor, plus a few optional fields of ours (`timeouts`, `disabled`, `description`).
 *
 * The resolved config holds secrets (env values, headers, possibly tokens in URLs): never log it;
 * use `describeServer` for anything user- or log-facing.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { HOST_SERVER } from '../core/tool-search';
import { describeIssues, jsonErrorPosition } from '../shared/issues';
import { ProblemList, resolveEnvRefs, resolveRecord, type PathPart, type RefContext } from './config-refs';
import { DEFAULT_MAX_MESSAGE_BYTES } from './transport-limits';
import { AuthSchema, HttpEntrySchema, KNOWN_KEYS, StdioEntrySchema, describeIssue, kindOf, type TimeoutsSchema } from './config-schema';

export { inputVariable } from './config-refs';

export interface McpTimeouts {
  /** Spawn/HTTP connect plus the `initialize` handshake. */
  connectMs: number;
  /** One tools/call, reset by every progress notification. */
  callMs: number;
  /** One tools/call in all, however much progress the server reports (DEFAULT_CALL_TOTAL_MS when absent). */
  callTotalMs?: number;
  /** Listing all tools of the server (all pages). */
  listMs: number;
}

export const DEFAULT_TIMEOUTS: Readonly<McpTimeouts> = Object.freeze({
  connectMs: 10_000,
  callMs: 60_000,
  listMs: 15_000,
});

/** Ten minutes: the tool activity's default start-to-close timeout (src/shared/turn.ts). */
export const DEFAULT_CALL_TOTAL_MS = 600_000;

/** The longest a tools/call may run, progress or not. */
export const callTotalMsOf = (cfg: McpServerConfig): number => cfg.timeouts.callTotalMs ?? DEFAULT_CALL_TOTAL_MS;

/** The largest message `cfg`'s server may send. */
export const maxMessageBytesOf = (cfg: McpServerConfig): number => cfg.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;

// Object type aliases rather than interfaces: aliases are assignable to Record<string, unknown>,
// which code that walks configs generically (e.g. collecting secrets to scrub) relies on.
type McpServerConfigBase = {
  name: string;
  description?: string;
  disabled: boolean;
  timeouts: McpTimeouts;
  /** The largest message the server may send, in bytes (DEFAULT_MAX_MESSAGE_BYTES when absent; src/mcp/transport-limits.ts). */
  maxMessageBytes?: number;
  /**
   * The directories the server may work in, as `file://` URIs, answered to its `roots/list` (and
   * announced with `roots/list_changed` when a reload changes them). Absent: none, never the whole disk.
   */
  roots?: McpRoot[];
  /**
   * The server applies a tools/call at most once per idempotency key (`_meta`), so any of its calls
   * may be sent again after a lost answer. Default false: a third-party server is not assumed to.
   */
  honoursIdempotencyKey?: boolean;
  /** Tools (names, or prefixes ending in `*`) the user vouches are free of side effects, whatever their annotations say. */
  readOnlyTools?: string[];
  /**
   * The MCP revision spoken to the server. Absent (`auto` in the file): `server/discover` is tried
   * first and a 2025-11-25 server is spoken to as before; a revision pins it (src/mcp/session-select.ts).
   */
  protocol?: McpProtocolRevision;
};

export type McpProtocolRevision = '2025-11-25' | '2026-07-28';

export type McpRoot = { uri: string; name: string };

export type StdioServerConfig = McpServerConfigBase & {
  kind: 'stdio';
  command: string;
  args: string[];
  /** Only these variables (plus the SDK's minimal safe set) reach the child, never process.env. */
  env: Record<string, string>;
  /** Absolute; a relative `cwd` is resolved against the config file's directory. */
  cwd: string;
};

export type HttpTransportPreference = 'auto' | 'streamable-http' | 'sse';

export type HttpServerConfig = McpServerConfigBase & {
  kind: 'http';
  url: string;
  headers: Record<string, string>;
  /** `auto` tries Streamable HTTP first and falls back to legacy HTTP+SSE on an HTTP 4xx. */
  transport: HttpTransportPreference;
  /** Whether the calling user's bearer token is sent along (default false). */
  forwardUserToken: boolean;
  /** OAuth 2.1 for this server (src/mcp/oauth); absent: static headers only. */
  auth?: McpAuthConfig;
};

/**
 * `oauth`: authorization code + PKCE on behalf of each user (tokens per user). `client_credentials`:
 * the host's own identity, with a client secret or a private key (a signed JWT assertion).
 */
export type McpAuthConfig =
  | { type: 'oauth'; scope?: string; clientId?: string; clientSecret?: string; clientMetadataUrl?: string }
  | { type: 'client_credentials'; clientId: string; clientSecret?: string; privateKey?: string; algorithm?: string; scope?: string };

export type McpServerConfig = StdioServerConfig | HttpServerConfig;

export interface McpConfig {
  /** The file (or label) the config came from, for messages. */
  source: string;
  /** Keyed by server name (each entry also carries its `name`), in file order. */
  mcpServers: Record<string, McpServerConfig>;
  /** Non-fatal findings, e.g. fields we do not know (other hosts add their own). Secret-free. */
  warnings: string[];
}

export class McpConfigError extends Error {
  override readonly name = 'McpConfigError';
  constructor(
    message: string,
    /** One entry per problem, each `<source>: <field path>: <what is wrong>`. */
    readonly problems: readonly string[] = [message],
  ) {
    super(message);
  }
}

export const SERVER_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,32}$/;

function warnUnknownKeys(
  entry: Record<string, unknown>,
  known: Set<string>,
  where: readonly PathPart[],
  warnings: ProblemList,
): void {
  for (const key of Object.keys(entry)) {
    if (!known.has(key)) warnings.add([...where, key], 'unknown field, ignored');
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolveTimeouts(t: z.infer<typeof TimeoutsSchema> | undefined): McpTimeouts {
  return {
    connectMs: t?.connectMs ?? DEFAULT_TIMEOUTS.connectMs,
    callMs: t?.callMs ?? DEFAULT_TIMEOUTS.callMs,
    ...(t?.callTotalMs !== undefined ? { callTotalMs: t.callTotalMs } : {}),
    listMs: t?.listMs ?? DEFAULT_TIMEOUTS.listMs,
  };
}

/**
 * Validates and resolves an already-parsed config document. `baseDir` is what relative `cwd`s are
 * resolved against (the config file's directory); `source` labels messages.
 */
export function parseMcpConfig(
  json: unknown,
  env: NodeJS.ProcessEnv,
  baseDir: string,
  source = 'mcp config',
): McpConfig {
  const problems = new ProblemList(source);
  const warnings = new ProblemList(source);
  const fail = (): never => {
    throw new McpConfigError(problems.items.join('\n'), problems.items);
  };

  if (!isPlainObject(json)) {
    problems.add([], `expected a JSON object, got ${kindOf(json)}`);
    return fail();
  }
  // Claude Desktop and Cursor write `mcpServers`; VS Code writes `servers` (beside its `inputs`).
  if ('mcpServers' in json && 'servers' in json) {
    problems.add([], 'expected either "mcpServers" or "servers" (VS Code), not both');
    return fail();
  }
  const serversKey = 'servers' in json ? 'servers' : 'mcpServers';
  const serversRaw = json[serversKey];
  if (!isPlainObject(serversRaw)) {
    problems.add([serversKey], `expected object${serversRaw === undefined ? ' (missing)' : `, got ${kindOf(serversRaw)}`}`);
    return fail();
  }
  const refs: RefContext = { env, baseDir, problems };

  const servers: Record<string, McpServerConfig> = {};
  for (const [name, entry] of Object.entries(serversRaw)) {
    const at: PathPart[] = [serversKey, name];
    if (!SERVER_NAME_PATTERN.test(name) || name.includes('__')) {
      problems.add(at, 'invalid server name: use 1-32 characters from [a-zA-Z0-9_-], without "__"');
      continue;
    }
    if (name === HOST_SERVER) {
      problems.add(at, `"${HOST_SERVER}" is reserved for the host's own tools (tool search): choose another name`);
      continue;
    }
    if (!isPlainObject(entry)) {
      problems.add(at, `expected object, got ${kindOf(entry)}`);
      continue;
    }
    const hasUrl = 'url' in entry;
    if (hasUrl && 'command' in entry) {
      problems.add(at, 'specify either "command" (stdio) or "url" (HTTP), not both');
      continue;
    }
    const schema = hasUrl ? HttpEntrySchema : StdioEntrySchema;
    const parsed = schema.safeParse(entry, { reportInput: true });
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => ({ ...issue, path: [...at, ...issue.path] }));
      problems.addLines(describeIssues(issues, '(root)', { message: (issue) => describeIssue(issue as z.core.$ZodIssue) }));
      continue;
    }
    warnUnknownKeys(entry, hasUrl ? KNOWN_KEYS.http : KNOWN_KEYS.stdio, at, warnings);
    if (isPlainObject(entry['timeouts'])) {
      warnUnknownKeys(entry['timeouts'], KNOWN_KEYS.timeouts, [...at, 'timeouts'], warnings);
    }
    const authEntry = entry['auth'];
    if (isPlainObject(authEntry) && (authEntry['type'] === 'oauth' || authEntry['type'] === 'client_credentials')) {
      warnUnknownKeys(authEntry, KNOWN_KEYS[authEntry['type']], [...at, 'auth'], warnings);
    }

    const data = parsed.data;
    const disabled = data.disabled ?? false;
    // A disabled server is never started, so its secrets need not exist on this machine: users
    // disable exactly the servers whose credentials they do not have.
    const resolveRefs = !disabled;
    const str = (value: string, field: PathPart[]): string =>
      resolveRefs ? resolveEnvRefs(value, refs, [...at, ...field]) : value;
    const roots = (data.roots ?? [])
      .map((root, i) => resolveRoot(str(root, ['roots', i]), baseDir, (what) => problems.add([...at, 'roots', i], what)))
      .filter((r): r is McpRoot => r !== undefined);
    const base = {
      name,
      disabled,
      timeouts: resolveTimeouts(data.timeouts),
      ...(data.maxMessageBytes !== undefined ? { maxMessageBytes: data.maxMessageBytes } : {}),
      ...(roots.length > 0 ? { roots } : {}),
      ...(data.honoursIdempotencyKey ? { honoursIdempotencyKey: true } : {}),
      ...(data.readOnlyTools?.length ? { readOnlyTools: data.readOnlyTools } : {}),
      ...(data.protocol !== undefined && data.protocol !== 'auto' ? { protocol: data.protocol } : {}),
      ...(data.description !== undefined ? { description: data.description } : {}),
    };

    if ('url' in data) {
      const url = str(data.url, ['url']);
      if (resolveRefs && !isHttpUrl(url)) problems.add([...at, 'url'], 'expected an http:// or https:// URL');
      const transport: HttpTransportPreference =
        data.transport ?? (data.type === 'sse' ? 'sse' : data.type === 'streamable-http' ? 'streamable-http' : 'auto');
      if (data.protocol === '2026-07-28' && transport === 'sse') {
        problems.add([...at, 'protocol'], 'protocol 2026-07-28 has no legacy HTTP+SSE transport: use "streamable-http" or "auto"');
      }
      const auth = data.auth ? resolveAuth(data.auth, (value, field) => str(value, ['auth', field])) : undefined;
      if (auth && data.forwardUserToken) {
        problems.add([...at, 'auth'], 'choose one of "auth" and "forwardUserToken": both would set the Authorization header');
      }
      if (auth?.type === 'client_credentials' && (auth.clientSecret === undefined) === (auth.privateKey === undefined)) {
        problems.add([...at, 'auth'], 'client_credentials needs exactly one of "clientSecret" and "privateKey"');
      }
      if (auth?.type === 'oauth' && auth.clientMetadataUrl !== undefined && resolveRefs && !auth.clientMetadataUrl.startsWith('https://')) {
        problems.add([...at, 'auth', 'clientMetadataUrl'], 'expected an https:// URL');
      }
      servers[name] = {
        ...base,
        kind: 'http',
        url,
        headers: resolveRecord(data.headers, refs, [...at, 'headers'], resolveRefs),
        transport,
        forwardUserToken: data.forwardUserToken ?? false,
        ...(auth ? { auth } : {}),
      };
    } else {
      const cwd = data.cwd === undefined ? baseDir : path.resolve(baseDir, str(data.cwd, ['cwd']));
      servers[name] = {
        ...base,
        kind: 'stdio',
        command: data.command,
        args: (data.args ?? []).map((arg, i) => str(arg, ['args', i])),
        env: resolveRecord(data.env, refs, [...at, 'env'], resolveRefs),
        cwd,
      };
    }
  }

  if (problems.items.length > 0) fail();
  return { source, mcpServers: servers, warnings: warnings.items };
}

/** A root as a `file://` URI and a name (its last path segment): a path resolved against the config's directory, or a URI. */
function resolveRoot(value: string, baseDir: string, problem: (what: string) => void): McpRoot | undefined {
  if (value === '') return undefined;
  let uri: URL;
  try {
    uri = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? new URL(value) : pathToFileURL(path.resolve(baseDir, value));
  } catch {
    problem('expected a directory path or a file:// URI');
    return undefined;
  }
  if (uri.protocol !== 'file:') {
    problem('expected a directory path or a file:// URI');
    return undefined;
  }
  const name = path.basename(fileURLToPath(uri)) || uri.href;
  return { uri: uri.href, name };
}

/** The auth block with its `${env:...}` references resolved (secrets belong in the environment). */
function resolveAuth(auth: z.infer<typeof AuthSchema>, str: (value: string, field: string) => string): McpAuthConfig {
  const out: Record<string, string> = {};
  for (const [field, value] of Object.entries(auth)) out[field] = field === 'type' ? value : str(value, field);
  return out as McpAuthConfig;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Reads, parses, validates and resolves a config file. Throws `McpConfigError`. */
export function loadMcpConfig(file: string, env: NodeJS.ProcessEnv): McpConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new McpConfigError(`${file}: cannot read config file (${code})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new McpConfigError(`${file}: invalid JSON${jsonErrorPosition(text, error)}`);
  }
  return parseMcpConfig(json, env, path.dirname(path.resolve(file)), file);
}

/** A secret-free one-liner: command and argument count, or the URL's origin only. */
export function describeServer(cfg: McpServerConfig): string {
  const state = cfg.disabled ? ' (disabled)' : '';
  if (cfg.kind === 'stdio') {
    const n = cfg.args.length;
    return `${cfg.name}: stdio ${cfg.command} with ${n} arg${n === 1 ? '' : 's'}${state}`;
  }
  let origin = 'invalid URL';
  try {
    origin = new URL(cfg.url).origin;
  } catch {
    // Disabled servers keep unresolved `${env:...}` URLs; nothing secret-free to show then.
  }
  return `${cfg.name}: ${cfg.transport === 'auto' ? 'http' : cfg.transport} ${origin}${state}`;
}
