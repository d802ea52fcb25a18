/**
 * Compiles example MCP servers (and what they import) into a private directory under
 * node_modules/.cache, so a suite depends neither on a prior `npm run build` nor on the rest of the
 * tree compiling, and a concurrent `rm -rf dist` cannot pull the files away mid-test. The directory
 * is named after a hash of every source the examples can import: suites running in parallel share
 * one build (under a lock), and an unchanged tree is not rebuilt.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';

const REPO_ROOT = path.resolve(__dirname, '../..');
/** Everything the example servers may import: a change anywhere here means a new build. */
const SOURCE_ROOTS = ['examples/servers', 'src/shared'];

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? tsFilesUnder(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
    .sort();
}

/** Compiles the given repo-relative `.ts` entry points; returns their compiled `.js` paths, in order. */
export async function compileExamples(entries: readonly string[], cacheName: string): Promise<string[]> {
  const hash = createHash('sha256');
  for (const file of SOURCE_ROOTS.flatMap((r) => tsFilesUnder(path.join(REPO_ROOT, r)))) hash.update(file).update(readFileSync(file));
  for (const entry of entries) hash.update(entry);
  const cacheRoot = path.join(REPO_ROOT, 'node_modules/.cache', cacheName);
  const digest = hash.digest('hex').slice(0, 16);
  const outDir = path.join(cacheRoot, digest);
  const scripts = entries.map((e) => path.join(outDir, e.replace(/\.ts$/, '.js')));
  const marker = path.join(outDir, '.built');
  if (existsSync(marker)) return scripts;

  mkdirSync(cacheRoot, { recursive: true });
  const release = await lockfile.lock(path.join(cacheRoot, digest), {
    realpath: false,
    lockfilePath: path.join(cacheRoot, `${digest}.lock`),
    stale: 60_000,
    retries: { retries: 600, minTimeout: 100, maxTimeout: 250 },
  });
  try {
    if (existsSync(marker)) return scripts;
    rmSync(outDir, { recursive: true, force: true });
    const tsc = require.resolve('typescript/bin/tsc', { paths: [REPO_ROOT] });
    try {
      execFileSync(
        process.execPath,
        [
          tsc,
          ...entries.map((e) => path.join(REPO_ROOT, e)),
          '--outDir', outDir,
          '--rootDir', REPO_ROOT,
          '--module', 'commonjs',
          '--moduleResolution', 'node',
          '--target', 'ES2022',
          '--esModuleInterop',
          '--skipLibCheck',
          '--strict',
          '--types', 'node',
          '--sourceMap', 'false',
        ],
        { cwd: REPO_ROOT, stdio: 'pipe' },
      );
    } catch (error) {
      const out = error as { stdout?: Buffer; stderr?: Buffer };
      throw new Error(`compiling ${entries.join(', ')} failed:\n${out.stdout?.toString() ?? ''}${out.stderr?.toString() ?? ''}`);
    }
    for (const script of scripts) if (!existsSync(script)) throw new Error(`not built: ${script}`);
    writeFileSync(marker, new Date().toISOString());
    // Builds of older sources are of no further use.
    for (const entry of readdirSync(cacheRoot)) {
      if (entry !== digest && !entry.startsWith(`${digest}.`)) rmSync(path.join(cacheRoot, entry), { recursive: true, force: true });
    }
    return scripts;
  } finally {
    await release();
  }
}

/** Resolves true once the child has exited, false if it is still running after `ms`. */
export function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
