/**
 * Secrets copied from an example instead of generated. deploy/env.example once shipped values such as
 * `CHANGE-0123...`, long enough to pass every length check, so an API started with them accepted
 * tokens anyone could mint from the public repository. The API and the worker refuse such values at
 * start (through loadEnvConfig), naming the variable and never echoing the value.
 *
 * Only recognizable placeholders are refused: a value that announces itself as one (`CHANGE-...`,
 * `changeme`, `replace-me`, `your-secret-here`, `<secret>`), or a bare word people type for a secret
 * (`secret`, `password`, ...). Random values (what `npm start` and `openssl rand -hex 32` produce)
 * never match: hex and base64 cannot spell these markers with a separator after them.
 */

/** The variables holding secrets the host's processes read, each checked when set. */
export const SECRET_VARIABLES = ['JWT_SECRET', 'TOKEN_SEAL_KEY', 'LIVE_SECRET', 'METRICS_TOKEN'] as const;

const MARKERS: readonly RegExp[] = [
  // The example env file's marker and its usual spellings: CHANGE-..., changeme, change_me, CHANGE.
  /^change(?:[-_ ]?me|[-_ .:]|$)/i,
  /^replace(?:[-_ ]?me|[-_ .:]|$)/i,
  // your-secret-here, my_password, your-jwt-secret...
  /^(?:your|my)[-_ ]?(?:[a-z]+[-_ ])?(?:secret|password|passwd|key|token)(?:[-_ ]|$)/i,
  // Angle-bracket or brace templates left unfilled: <secret>, {{TOKEN}}, ${SECRET}.
  /^(?:<[^>]*>|\{\{.*\}\}|\$\{.*\})$/,
];

// Bare words people type for a secret, and the upstream compose files' database passwords.
const WORDS = new Set(['secret', 'password', 'passwd', 'example', 'placeholder', 'todo', 'fixme', 'default', 'test', 'xxx', '...', 'none', 'null', 'undefined', 'temporal', 'postgres']);

/** Whether a value is a placeholder rather than a secret someone generated. */
export function isPlaceholder(value: string): boolean {
  const v = value.trim();
  if (WORDS.has(v.toLowerCase())) return true;
  // One character repeated (xxxxxxxx..., ********...) is a filler, whatever its length.
  if (v.length > 1 && /^(.)\1+$/s.test(v)) return true;
  return MARKERS.some((m) => m.test(v));
}

const HOW = 'replace it with a random value (for example the output of `openssl rand -hex 32`)';

/** The password inside a postgres:// URL, decoded; undefined when the URL has none or does not parse. */
function urlPassword(value: string): string | undefined {
  try {
    const password = new URL(value).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}

export interface PlaceholderProblem {
  variable: string;
  message: string;
}

/**
 * One problem per variable holding a placeholder: the secrets, and the password inside POSTGRES_URL
 * (the compose stack builds it from POSTGRES_PASSWORD). Messages never contain the value.
 */
export function placeholderProblems(env: Readonly<Record<string, unknown>>): PlaceholderProblem[] {
  const problems: PlaceholderProblem[] = [];
  for (const variable of SECRET_VARIABLES) {
    const value = env[variable];
    if (typeof value === 'string' && value !== '' && isPlaceholder(value)) {
      problems.push({ variable, message: `is a placeholder, not a secret; ${HOW}` });
    }
  }
  const url = env['POSTGRES_URL'];
  const password = typeof url === 'string' ? urlPassword(url) : undefined;
  if (password !== undefined && isPlaceholder(password)) {
    problems.push({ variable: 'POSTGRES_URL', message: `its password is a placeholder (in the compose stack: POSTGRES_PASSWORD); ${HOW}` });
  }
  return problems;
}
