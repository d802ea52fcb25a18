import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { soakAllocator } from '../../soak/allocator';

const lib = path.join(mkdtempSync(path.join(tmpdir(), 'soak-alloc-')), 'libjemalloc.so.2');
writeFileSync(lib, '');

test('the library SOAK_JEMALLOC names is preloaded, as the image does', () => {
  expect(soakAllocator({ SOAK_JEMALLOC: lib })).toMatchObject({ name: 'jemalloc', env: { LD_PRELOAD: lib } });
  expect(soakAllocator({ SOAK_JEMALLOC: lib, SOAK_ALLOCATOR: 'jemalloc' })).toMatchObject({ name: 'jemalloc', env: { LD_PRELOAD: lib } });
});

test('without it the run goes on glibc and says it is unlike the image; SOAK_ALLOCATOR=glibc chooses that', () => {
  const missing = soakAllocator({});
  expect(missing).toMatchObject({ name: 'glibc malloc', env: {} });
  expect(missing.why).toMatch(/unlike the image/);
  expect(soakAllocator({ SOAK_ALLOCATOR: 'glibc', SOAK_JEMALLOC: lib })).toMatchObject({ name: 'glibc malloc', env: {} });
});

test('a wrong setting is a clear error, not a silent fallback', () => {
  expect(() => soakAllocator({ SOAK_ALLOCATOR: 'tcmalloc', SOAK_JEMALLOC: lib })).toThrow(/jemalloc or glibc/);
  expect(() => soakAllocator({ SOAK_JEMALLOC: '/nowhere/libjemalloc.so.2' })).toThrow(/does not exist/);
  expect(() => soakAllocator({ SOAK_ALLOCATOR: 'jemalloc' })).toThrow(/names no library/);
});
