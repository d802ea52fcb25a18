// Lint enforces the ring boundaries (ARCHITECTURE.md §3) and catches forgotten awaits.
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'node:*', 'fs', 'fs/*', 'path', 'os', 'child_process', 'net', 'http', 'https', 'crypto', 'stream',
  'events', 'util', 'worker_threads', 'process', 'dns', 'tls', 'zlib', 'url', 'timers',
];
const ioModules = [
  'openai', 'fastify', '@fastify/*', 'pino', '@modelcontextprotocol/*', '@temporalio/client',
  '@temporalio/worker', '@temporalio/activity', 'ajv',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.tools/**', 'coverage/**', '*.config.js', '*.config.mjs'] },
  ...tseslint.configs.recommended,
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
    // Workflow code is replayed: no I/O, no Node built-ins. The pure core obeys the same rule.
    files: ['src/workflows/**/*.ts', 'src/shared/**/*.ts', 'src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: nodeBuiltins, message: 'Workflow and core code must not use Node built-ins.' },
          { group: ioModules, message: 'Workflow and core code must not import I/O modules; use activities.' },
        ],
      }],
    },
  },
  {
    // Workflows may import activities only as types.
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': ['error', {
        selector: "ImportDeclaration[source.value=/activities/][importKind!='type']",
        message: 'Import activities as types only (import type ...).',
      }],
    },
  },
);
