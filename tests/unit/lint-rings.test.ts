import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The ring rules of eslint.config.mjs fire: each probe is linted as if it were the content of a real
 * file of that ring (typed linting needs a file the project knows), in one ESLint process.
 */
const ROOT = path.resolve(__dirname, '../..');

interface Probe {
  file: string;
  code: string;
}

function lint(probes: Probe[]): string[][] {
  const script = `
    const { ESLint } = require('eslint');
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const probes = JSON.parse(process.argv[1]);
      const out = [];
      for (const p of probes) {
        const [result] = await eslint.lintText(p.code, { filePath: p.file });
        out.push(result.messages.map((m) => m.ruleId + ': ' + m.message));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });`;
  const run = spawnSync(process.execPath, ['-e', script, JSON.stringify(probes)], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (run.status !== 0) throw new Error(`eslint failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as string[][];
}

const RING = '@typescript-eslint/no-restricted-imports';

const probes: Array<Probe & { expect: 'error' | 'clean'; why: string }> = [
  { why: 'a workflow importing the MCP pool', file: 'src/workflows/catalog.ts', code: "import { McpServerHub } from '../mcp/pool';\nexport const h = McpServerHub;\n", expect: 'error' },
  { why: 'a workflow importing an MCP type', file: 'src/workflows/catalog.ts', code: "import type { McpHub } from '../mcp/types';\nexport type H = McpHub;\n", expect: 'clean' },
  { why: 'a workflow importing activities as values', file: 'src/workflows/catalog.ts', code: "import { createActivities } from '../activities';\nexport const c = createActivities;\n", expect: 'error' },
  { why: 'a workflow importing zod', file: 'src/workflows/catalog.ts', code: "import { z } from 'zod';\nexport const s = z.string();\n", expect: 'error' },
  { why: 'a workflow importing a Node built-in', file: 'src/workflows/catalog.ts', code: "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;\n", expect: 'error' },
  { why: 'an MCP file importing @temporalio/activity', file: 'src/mcp/types.ts', code: "import { Context } from '@temporalio/activity';\nexport const c = Context;\n", expect: 'error' },
  { why: 'the API importing activities', file: 'src/api/errors.ts', code: "import { createActivities } from '../activities';\nexport const c = createActivities;\n", expect: 'error' },
  { why: 'the API importing the Temporal client outside the gateway', file: 'src/api/errors.ts', code: "import { Client } from '@temporalio/client';\nexport const c = Client;\n", expect: 'error' },
  { why: 'the core importing zod', file: 'src/core/host-loop.ts', code: "import { z } from 'zod';\nexport const s = z.string();\n", expect: 'error' },
  { why: 'shared importing the core', file: 'src/shared/ids.ts', code: "import { decideTool } from '../core/policy';\nexport const d = decideTool;\n", expect: 'error' },
  { why: 'infrastructure importing a workflow', file: 'src/llm/errors.ts', code: "import { turnWorkflow } from '../workflows/turn';\nexport const t = turnWorkflow;\n", expect: 'error' },
  { why: 'the core importing shared', file: 'src/core/host-loop.ts', code: "import { llmToolName } from '../shared/tool-names';\nexport const t = llmToolName;\n", expect: 'clean' },
];

describe('lint enforces the rings', () => {
  let results: string[][];
  beforeAll(() => {
    results = lint(probes);
  }, 120_000);

  it.each(probes.map((p, i) => [p.why, p.expect, i] as const))('%s: %s', (_why, expected, i) => {
    const ring = (results[i] ?? []).filter((m) => m.startsWith(`${RING}:`));
    if (expected === 'error') expect(ring.length).toBeGreaterThan(0);
    else expect(results[i]).toEqual([]);
  });
});
