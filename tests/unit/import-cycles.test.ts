/**
 * No import circle in src/: a circle makes load order matter (a value read before its module ran is
 * undefined) and glues modules that should stand apart. Type-only imports count too: they are the
 * same dependency in the design, only erased at run time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as ts from 'typescript';

type Graph = Map<string, string[]>;

/** The file a relative specifier names (`./x`, `./x.js`, `./dir`), or undefined for a package. */
function resolveImport(from: string, specifier: string, exists: (file: string) => boolean): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), specifier.replace(/\.js$/, ''));
  return [`${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')].find(exists);
}

/** Every file's relative imports: import and export declarations, `import x = require()`, `import()`. */
function importGraph(files: readonly string[], read: (file: string) => string, exists: (file: string) => boolean): Graph {
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(read(file), true, true);
    const deps = importedFiles.map((ref) => resolveImport(file, ref.fileName, exists)).filter((dep): dep is string => dep !== undefined);
    graph.set(file, [...new Set(deps)]);
  }
  return graph;
}

/** The circles of the graph: each strongly connected set of two or more files, or a file importing itself (Tarjan). */
function circles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const dep of graph.get(file) ?? []) {
      if (!index.has(dep)) {
        visit(dep);
        low.set(file, Math.min(low.get(file)!, low.get(dep)!));
      } else if (onStack.has(dep)) {
        low.set(file, Math.min(low.get(file)!, index.get(dep)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      members.push(member);
    } while (member !== file);
    if (members.length > 1 || graph.get(file)?.includes(file)) found.push(members.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

const SRC = path.resolve(__dirname, '../../src');

test('src/ has no import circle', () => {
  const graph = importGraph(sourceFiles(SRC), (file) => readFileSync(file, 'utf8'), existsSync);
  // Enough files that a broken walk or resolver cannot pass for a clean graph.
  expect(graph.size).toBeGreaterThan(100);
  expect([...graph.values()].flat().length).toBeGreaterThan(graph.size);
  const named = circles(graph).map((members) => members.map((file) => path.relative(SRC, file)));
  expect(named).toEqual([]);
});

test('the check finds a circle through type-only imports, re-exports and index files', () => {
  const files: Record<string, string> = {
    '/p/a.ts': "import type { B } from './b';\nexport type A = B;\n",
    '/p/b.ts': "export { c } from './dir';\nexport type B = string;\n",
    '/p/dir/index.ts': "import { a } from '../a.js';\nexport const c = a;\n",
    '/p/d.ts': "import { c } from './b';\nimport { z } from 'zod';\nexport const d = [c, z];\n",
    '/p/self.ts': "import { s } from './self';\nexport const t = s;\n",
  };
  const graph = importGraph(Object.keys(files), (file) => files[file]!, (file) => file in files);
  expect(graph.get('/p/d.ts')).toEqual(['/p/b.ts']);
  expect(circles(graph)).toEqual([['/p/a.ts', '/p/b.ts', '/p/dir/index.ts'], ['/p/self.ts']]);
});
