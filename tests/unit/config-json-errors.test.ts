import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadHostConfig } from '../../src/config';
import { loadPolicyFile } from '../../src/config/policy';
import { loadRulesFile } from '../../src/demo-model/rules-file';

/**
 * Issue 27 §4: a config file that is not JSON says where, a file cut short that it is, for each file
 * `npm start` reads (the MCP config's own cases: tests/unit/mcp-config.test.ts), and quotes none of
 * its text.
 */
let dir: string;
beforeAll(() => (dir = mkdtempSync(path.join(tmpdir(), 'dmh-json-errors-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

function messageOf(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the load to fail');
}

const CUT = '(the file ends before the JSON does: is it cut short?)';

test.each([
  ['host config', (f: string) => loadHostConfig(f), (f: string) => `${f}: host config is not valid JSON`],
  ['policy', (f: string) => loadPolicyFile(f), (f: string) => `policy file ${f} is not valid JSON`],
  ['demo model rules', (f: string) => loadRulesFile(f), (f: string) => `rules file ${f} is not valid JSON`],
])('%s: a file cut short, and a stray character, each with its line and column', (name, load, prefix) => {
  const cut = file(`${name}-cut.json`, '{\n  "maxSteps": 8,\n  "roles": {');
  expect(messageOf(() => load(cut))).toBe(`${prefix(cut)} at line 3, column 13 ${CUT}`);
  const stray = file(`${name}-stray.json`, '{\n  "maxSteps": 8,\n  "token": s3cr3t-value\n}');
  const message = messageOf(() => load(stray));
  expect(message).toBe(`${prefix(stray)} at line 3, column 12`);
  expect(message).not.toContain('s3cr3t');
});
