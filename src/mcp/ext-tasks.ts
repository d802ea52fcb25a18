/**
 * `@modelcontextprotocol/ext-tasks` (MCP tasks on 2026-07-28, tasks-v2.ts) for this CommonJS build.
 * The package ships ES modules only and exports its entry points under the `import` condition alone,
 * so `require('@modelcontextprotocol/ext-tasks/client')` is refused (ERR_PACKAGE_PATH_NOT_EXPORTED).
 * Its files are loaded by path instead: Node 22 runs them through require(esm), jest through its
 * transform (jest.config.js), as for jose. The types are the package's own.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';

const PACKAGE = '@modelcontextprotocol/ext-tasks';

function packageDir(): string {
  const dir = (require.resolve.paths(PACKAGE) ?? []).map((p) => path.join(p, PACKAGE)).find((d) => existsSync(path.join(d, 'package.json')));
  if (!dir) throw new Error(`${PACKAGE} is not installed`);
  return dir;
}

const dir = packageDir();
/* eslint-disable @typescript-eslint/no-require-imports -- an ESM-only package's files, by path (see above) */
export const tasksClient = require(path.join(dir, 'dist/client/index.js')) as typeof import('@modelcontextprotocol/ext-tasks/client');
export const tasksCore = require(path.join(dir, 'dist/core/index.js')) as typeof import('@modelcontextprotocol/ext-tasks/core');
export const tasksCoreV2 = require(path.join(dir, 'dist/core/v2/index.js')) as typeof import('@modelcontextprotocol/ext-tasks/core/v2');
/* eslint-enable @typescript-eslint/no-require-imports */
