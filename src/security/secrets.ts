/**
 * Secret values the host knows (keys, tokens, MCP server env and headers) and the one scrubber that
 * keeps them out of anything a user, a log or a workflow history may see.
 *
 * A scrubber can only hide what it is told about: the collector below is the single list of what a
 * server's configuration makes secret, used by the MCP pool for its messages and by the worker for
 * everything the activities report.
 */
import type { HttpServerConfig, McpConfig, McpServerConfig } from '../mcp/config';

export const SECRET_MASK = '[redacted]';

/** Values this short ("1", "on") are not secrets worth shredding messages over. */
const MIN_SECRET_CHARS = 4;

/** Env and header values, bearer tokens on their own, and the secret parts of a server's URL. */
export function serverSecrets(cfg: McpServerConfig): string[] {
  if (cfg.kind === 'stdio') return distinct(Object.values(cfg.env));
  const headerValues = Object.values(cfg.headers);
  return distinct([
    ...headerValues,
    // `Bearer <token>`: the token may show up in a message without its scheme.
    ...headerValues.flatMap((value) => value.split(/\s+/).filter((part) => part.length >= 8)),
    ...secretUrlParts(cfg),
    ...(cfg.auth?.clientSecret ? [cfg.auth.clientSecret] : []),
    ...(cfg.auth?.type === 'client_credentials' && cfg.auth.privateKey ? [cfg.auth.privateKey] : []),
  ]);
}

/** The secrets of every configured server. */
export function configSecrets(config: McpConfig): string[] {
  return distinct(Object.values(config.mcpServers).flatMap(serverSecrets));
}

/** The text with every known secret replaced by `[redacted]`, longest first so none is left half hidden. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of distinct(secrets)) out = out.split(secret).join(SECRET_MASK);
  return out;
}

function secretUrlParts(cfg: HttpServerConfig): string[] {
  let url: URL;
  try {
    url = new URL(cfg.url);
  } catch {
    return [];
  }
  const parts = [url.password, url.username, url.search.slice(1)];
  // Tokens are sometimes part of the path (`/mcp/<token>`): everything after the host is hidden.
  if (url.pathname.length > 1 || url.search) parts.push(`${url.pathname}${url.search}`);
  return parts;
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length);
}
