// Lint enforces the rings of ARCHITECTURE.md §3 and catches forgotten awaits.
//
//   pure core        src/shared, src/core          no I/O, no Node built-ins, no zod, no Temporal
//   Temporal shell   src/workflows, src/activities  workflows: deterministic, activities as types only
//   infrastructure   everything else in src/        knows nothing of Temporal, except the wiring files
//
// Imports point inwards only. Type-only imports may cross (they vanish at compile time); value imports
// may not. tests/unit/lint-rings.test.ts proves each ban fires.
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'node:*', 'fs', 'fs/*', 'path', 'os', 'child_process', 'net', 'http', 'https', 'crypto', 'stream',
  'events', 'util', 'worker_threads', 'process', 'dns', 'tls', 'zlib', 'url', 'timers',
];
const ioModules = [
  'openai', 'openai/*', 'fastify', '@fastify/*', 'pino', '@modelcontextprotocol/*', '@temporalio/client',
  '@temporalio/worker', '@temporalio/activity', 'ajv', 'ajv/*', 'jose', 'proper-lockfile', 'rate-limiter-flexible',
];

/** Relative-import patterns of each folder of src/, as written from a sibling folder or deeper. */
const folder = (name) => [`**/${name}`, `**/${name}/*`, ...(name === 'api' ? ['!@opentelemetry/api'] : [])];
const infrastructure = [
  ...folder('api'), ...folder('mcp'), ...folder('llm'), ...folder('audit'), ...folder('cli'), ...folder('live'),
  ...folder('security'), ...folder('validation'), ...folder('metrics'), ...folder('config'), ...folder('demo-model'), ...folder('health'), ...folder('telemetry'), ...folder('usage'), ...folder('pg'), '**/logger', '../worker', '../../worker',
];

/** One `no-restricted-imports` rule per file set: flat config replaces a rule, it does not merge it. */
function restrict(...groups) {
  return {
    '@typescript-eslint/no-restricted-imports': ['error', {
      patterns: groups.map(([group, message]) => ({ group, message, allowTypeImports: true })),
    }],
  };
}

const notInCore = [
  [nodeBuiltins, 'The pure core must not use Node built-ins.'],
  [ioModules, 'The pure core must not import I/O modules.'],
  [['zod', 'zod/*'], 'Validation schemas live at the edges (src/config, src/api); the core takes typed values.'],
  [['@temporalio/*'], 'The pure core knows nothing of Temporal.'],
  [[...folder('workflows'), ...folder('activities'), ...infrastructure], 'The pure core imports only src/shared and src/core.'],
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.tools/**', 'coverage/**', '*.config.js', '*.config.mjs'] },
  ...tseslint.configs.recommended,
  {
    // The console runs in browsers as ES modules: browser globals only, and nothing undeclared.
    files: ['console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['window', 'document', 'fetch', 'EventSource', 'sessionStorage', 'atob', 'alert', 'setInterval', 'clearInterval', 'URL', 'URLSearchParams', 'location', 'history', 'encodeURIComponent', 'JSON', 'Date', 'Object', 'String', 'Error', 'Promise', 'console', 'crypto', 'setTimeout', 'Uint8Array', 'Array']
          .map((name) => [name, 'readonly']),
      ),
    },
    rules: { 'no-undef': 'error' },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: restrict(...notInCore),
  },
  {
    // shared is the innermost ring: not even the core's decisions.
    files: ['src/shared/**/*.ts'],
    rules: restrict(...notInCore, [folder('core'), 'src/shared is the innermost ring: it imports nothing of ours but itself.']),
  },
  {
    // Workflow code is replayed: no I/O, no Node built-ins, and activities only as types.
    files: ['src/workflows/**/*.ts'],
    rules: {
      ...restrict(
        [nodeBuiltins, 'Workflow code must not use Node built-ins.'],
        [ioModules, 'Workflow code must not import I/O modules; use activities.'],
        [['zod', 'zod/*'], 'Validation schemas live at the edges; workflow code takes typed values (and zod weighs ~1 MB in the bundle).'],
        [folder('activities'), 'Import activities as types only (import type ...).'],
        [infrastructure, 'Workflows import only src/shared, src/core and other workflow files.'],
      ),
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/activities/**/*.ts'],
    rules: restrict(
      [['@temporalio/client', '@temporalio/worker', '@temporalio/workflow'], 'Activities use @temporalio/activity only.'],
      [[...folder('workflows'), ...folder('api'), ...folder('cli'), '../worker', '../../worker'], 'Activities call infrastructure; they never import workflows, the API or the wiring.'],
    ),
  },
  {
    // Infrastructure libraries know nothing of Temporal; the wiring files below are the exception.
    files: ['src/mcp/**/*.ts', 'src/llm/**/*.ts', 'src/audit/**/*.ts', 'src/live/**/*.ts', 'src/security/**/*.ts', 'src/metrics/**/*.ts', 'src/config/**/*.ts', 'src/demo-model/**/*.ts', 'src/health/**/*.ts', 'src/telemetry/**/*.ts', 'src/usage/**/*.ts', 'src/pg/**/*.ts', 'src/logger.ts'],
    rules: restrict(
      [['@temporalio/*'], 'Infrastructure knows nothing of Temporal; wire it in src/worker.ts or src/api/main.ts.'],
      [[...folder('workflows'), ...folder('activities'), ...folder('api'), ...folder('cli'), '../worker', '../../worker'], 'Infrastructure must not import the Temporal shell, the API or the wiring.'],
    ),
  },
  {
    // The API reaches Temporal only through its gateway (and main.ts, which connects the client).
    files: ['src/api/**/*.ts'],
    ignores: ['src/api/gateway/**/*.ts', 'src/api/main.ts'],
    rules: restrict(
      [['@temporalio/*'], 'The API reaches Temporal only through TurnGateway (src/api/gateway/).'],
      [[...folder('workflows'), ...folder('activities'), ...folder('mcp'), ...folder('llm'), ...folder('cli'), '../worker', '../../worker'], 'The API reaches workflows only through TurnGateway; it never imports activities, MCP or LLM code.'],
    ),
  },
  {
    files: ['src/api/gateway/**/*.ts', 'src/api/main.ts'],
    rules: restrict(
      [['@temporalio/worker', '@temporalio/activity'], 'The API is a Temporal client, never a worker.'],
      [[...folder('activities'), ...folder('mcp'), ...folder('llm'), ...folder('cli'), '../worker', '../../worker'], 'The API never imports activities, MCP or LLM code.'],
    ),
  },
);
