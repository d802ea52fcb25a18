/**
 * The shared store in-process: seeding, keeping an existing file, atomic writes, the transaction
 * contract, and the pure helpers (fuzzy name match, templates, user context).
 */
import fs, { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { produce } from 'immer';
import type * as Lockfile from 'proper-lockfile';
import { matchScore } from '../../examples/servers/school/admin-server';
import { callerOf } from '../../examples/servers/school/core';
import { renderTemplate } from '../../examples/servers/school/comms-server';
import { createSeedData, nextInvoiceId, readStore, resolveDataFile, SchoolStore, SEED, type User } from '../../examples/servers/school/store';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../../src/shared/meta';
import { tempDir, waitFor } from './helpers';

const tmp = tempDir('school-store-');
afterAll(() => tmp.remove());

test('the seed: tenants, users, classes, invoices; every record carries tenantId', () => {
  const data = createSeedData();
  const demoUsers = data.users.filter((u) => u.tenantId === 'demo');
  expect(demoUsers.map((u) => [u.name, u.role, u.email])).toEqual([
    ['Ada Admin', 'admin', 'ada@school.example'],
    ['Tom Teacher', 'teacher', 'tom@school.example'],
    ['Bob Brown', 'student', 'bob@school.example'],
    ['Carol Chen', 'student', 'carol@school.example'],
    ['Dan Diaz', 'student', 'dan@school.example'],
  ]);
  expect(data.classes.find((c) => c.name === 'English 101')?.teacherId).toBe(SEED.users.tom);
  expect(data.enrolments.filter((e) => e.classId === SEED.classes.english101).map((e) => e.studentId)).toEqual([SEED.users.bob, SEED.users.carol, SEED.users.dan]);
  expect(data.invoices.filter((i) => i.userId === SEED.users.bob)).toEqual([
    expect.objectContaining({ id: 'INV-1001', amount: 250, currency: 'EUR', status: 'unpaid', description: 'Term 1 tuition' }),
  ]);
  expect(data.invoices.filter((i) => i.userId === SEED.users.carol).map((i) => i.status)).toEqual(['paid']);
  expect(data.users.filter((u) => u.tenantId === 'other').length).toBeGreaterThanOrEqual(2);
  for (const key of ['users', 'classes', 'enrolments', 'grades', 'timetable', 'homework', 'submissions', 'attendance', 'invoices', 'transactions'] as const) {
    expect(data[key].length).toBeGreaterThan(0);
    for (const record of data[key]) expect(['demo', 'other']).toContain(record.tenantId);
  }
  expect(data.outbox).toEqual([]);
  expect(data.idempotency).toEqual({});
  expect(nextInvoiceId(data.invoices)).toBe('INV-1003');
});

test('a missing file is seeded on first use; an existing one is kept', async () => {
  const file = tmp.file('nested/dir/school.json');
  const store = new SchoolStore(file);
  expect(existsSync(file)).toBe(false);
  expect((await store.read()).users.find((u) => u.id === SEED.users.bob)?.name).toBe('Bob Brown');
  expect(existsSync(file)).toBe(true);

  const custom = createSeedData();
  custom.users = custom.users.filter((u) => u.id !== SEED.users.dan);
  writeFileSync(file, JSON.stringify(custom));
  await new SchoolStore(file).ensure();
  expect(readStore(file).users.some((u) => u.id === SEED.users.dan)).toBe(false);
});

test('reads share one parsed copy, frozen, until the file changes: a write by any process is seen at the next read', async () => {
  const file = tmp.file('cached/school.json');
  const store = new SchoolStore(file);
  const first = await store.read();
  expect(await store.read()).toBe(first);
  // Readers share it: mutating it throws rather than changing what the next reader sees.
  expect(() => (first.users as User[]).push({ ...(first.users[0] as User), id: 'u-intruder' })).toThrow(TypeError);
  expect(() => Object.assign(first.users[0] as User, { name: 'Mallory' })).toThrow(TypeError);
  // A write through another store object (as another server process would) is read at once.
  await new SchoolStore(file).transact((data) => ({
    value: undefined,
    next: produce(data, (draft) => {
      draft.users.push({ id: 'u-new', tenantId: SEED.tenant, name: 'Nina New', role: 'student', createdAt: new Date().toISOString() });
    }),
  }));
  const second = await store.read();
  expect(second).not.toBe(first);
  expect(second.users.map((u) => u.id)).toContain('u-new');
  expect(first.users.map((u) => u.id)).not.toContain('u-new');
  // A file replaced by hand is a new version too (a new inode); the log of the file before is not its own.
  const edited = JSON.stringify(readStore(file)).replace('Nina New', 'Nina Neu');
  writeFileSync(`${file}.edit`, edited);
  fs.renameSync(`${file}.edit`, file);
  expect((await store.read()).users.find((u) => u.id === 'u-new')?.name).toBe('Nina Neu');
  expect(readStore(file).users.find((u) => u.id === 'u-new')?.name).toBe('Nina Neu');
});

test('transactions: parallel writers from two store objects lose nothing; a throwing one writes nothing', async () => {
  const file = tmp.file('tx.json');
  const a = new SchoolStore(file);
  const b = new SchoolStore(file);
  const now = new Date().toISOString();
  await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      (i % 2 ? a : b).transact((data) => {
        const user: User = { id: `u-tx${i}`, tenantId: 'demo', name: `T ${i}`, role: 'student', createdAt: now };
        return { value: user.id, next: produce(data, (draft) => void draft.users.push(user)) };
      }),
    ),
  );
  expect(readStore(file).users.filter((u) => u.id.startsWith('u-tx'))).toHaveLength(30);

  const before = [readFileSync(file, 'utf8'), readFileSync(`${file}.wal`, 'utf8')];
  await expect(
    a.transact((data) => {
      // The data given is frozen: a transaction changes a draft of it.
      expect(() => (data.users as User[]).push(data.users[0] as User)).toThrow(TypeError);
      produce(data, (draft) => void (draft.users.length = 0));
      throw new Error('boom');
    }),
  ).rejects.toThrow('boom');
  expect([readFileSync(file, 'utf8'), readFileSync(`${file}.wal`, 'utf8')]).toEqual(before);
  // No temp files or lock directory left behind.
  expect(readdirSync(tmp.dir).filter((f) => f.startsWith('tx.json')).sort()).toEqual(['tx.json', 'tx.json.wal']);
});

/**
 * Counts the times a writer found the lock directory there already: proper-lockfile takes the lock
 * with a mkdir through the `fs` it is given (its documented `fs` option), here one that counts EEXIST.
 */
function countLockRefusals(): { refusals: () => number; restore: () => void } {
  const lockfile = jest.requireActual<typeof Lockfile>('proper-lockfile');
  const lock = lockfile.lock;
  let refusals = 0;
  const mkdir = (dir: string, done: (err: NodeJS.ErrnoException | null) => void) =>
    fs.mkdir(dir, (err) => {
      if (err?.code === 'EEXIST') refusals += 1;
      done(err);
    });
  const spy = jest.spyOn(lockfile, 'lock').mockImplementation((file, options) => lock(file, { ...options, fs: { ...fs, mkdir } }));
  return { refusals: () => refusals, restore: () => spy.mockRestore() };
}

test('a lock left by a killed process is taken over once stale; a live one is waited for', async () => {
  const file = tmp.file('stale.json');
  const store = new SchoolStore(file);
  await store.ensure();
  const lock = countLockRefusals();
  try {
    // What a holder SIGKILLed mid-transaction leaves behind: the lock directory, no longer refreshed.
    mkdirSync(`${file}.lock`);
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    await store.transact((data) => ({ value: undefined, next: data }));
    // Taken over at its first sight, without waiting for it to go.
    expect(lock.refusals()).toBe(1);
    expect(existsSync(`${file}.lock`)).toBe(false);

    // A fresh lock (a live holder in another process) makes the writer wait until it is released.
    mkdirSync(`${file}.lock`);
    let done = false;
    const pending = store.transact((data) => ({ value: undefined, next: data })).then(() => (done = true));
    // The writer has found the lock held and tried again, three times over: it waits rather than write.
    await waitFor('the writer to find the live lock held three times', () => lock.refusals() >= 4);
    expect(done).toBe(false);
    rmSync(`${file}.lock`, { recursive: true });
    await pending;
    expect(done).toBe(true);
  } finally {
    lock.restore();
  }
});

test('a corrupt file is reported, never overwritten', async () => {
  const file = tmp.file('corrupt.json');
  writeFileSync(file, '{ "users": [');
  const store = new SchoolStore(file);
  await expect(store.read()).rejects.toThrow(/not valid JSON/);
  await expect(store.transact(() => ({ value: 1, next: createSeedData() }))).rejects.toThrow(/not valid JSON/);
  expect(readFileSync(file, 'utf8')).toBe('{ "users": [');
});

test('resolveDataFile: --data, then SCHOOL_DATA_FILE, then .data/school.json', () => {
  expect(resolveDataFile('/x/a.json', { SCHOOL_DATA_FILE: '/y/b.json' })).toBe('/x/a.json');
  expect(resolveDataFile(undefined, { SCHOOL_DATA_FILE: '/y/b.json' })).toBe('/y/b.json');
  expect(resolveDataFile(undefined, {})).toBe(`${process.cwd()}/.data/school.json`);
});

test('find_user matching is case-insensitive, partial and typo-tolerant', () => {
  const users = createSeedData().users.filter((u) => u.tenantId === 'demo');
  const best = (q: string): string[] =>
    users
      .map((u) => ({ u, s: matchScore(q, u) }))
      .filter((m) => m.s > 0)
      .sort((x, y) => y.s - x.s)
      .map((m) => m.u.name);
  expect(best('bob')).toEqual(['Bob Brown']);
  expect(best('BOB BROWN')).toEqual(['Bob Brown']);
  expect(best('carl chen')[0]).toBe('Carol Chen');
  expect(best('brwon')).toEqual(['Bob Brown']);
  expect(best('tom@school.example')).toEqual(['Tom Teacher']);
  expect(best('zebra')).toEqual([]);
  expect(best('')).toHaveLength(5);
});

test('templates render and demand their variables', () => {
  expect(renderTemplate('homework_assigned', { homework_title: 'Essay', due_date: '2026-01-01' })).toEqual({
    subject: 'New homework: Essay',
    body: 'Hello,\n\nYour teacher has assigned "Essay" for your class, due 2026-01-01.\n\nGood luck!',
  });
  expect(renderTemplate('announcement', { message: 'No school tomorrow' })).toEqual({ subject: 'Announcement', body: 'No school tomorrow' });
  expect(() => renderTemplate('announcement', {})).toThrow(/message/);
});

test('callerOf: tenant from the user context, default otherwise, malformed refused', () => {
  expect(callerOf(undefined, 'demo')).toEqual({ tenantId: 'demo', scopes: [] });
  expect(
    callerOf(
      {
        [USER_CONTEXT_META_KEY]: { id: 'u-1', role: 'admin', tenant: 'other', scopes: ['admin.read', 3] },
        [IDEMPOTENCY_KEY_META_KEY]: 'k1',
        [TRACE_META_KEY]: 'turn-1',
      },
      'demo',
    ),
  ).toEqual({ tenantId: 'other', userId: 'u-1', role: 'admin', scopes: ['admin.read'], idempotencyKey: 'k1', traceId: 'turn-1' });
  expect(callerOf({ [USER_CONTEXT_META_KEY]: { id: 'u-1' } }, 'fallback').tenantId).toBe('fallback');
  expect(() => callerOf({ [USER_CONTEXT_META_KEY]: 'demo' }, 'demo')).toThrow(/invalid user context/);
  expect(() => callerOf({ [USER_CONTEXT_META_KEY]: { tenant: 42 } }, 'demo')).toThrow(/invalid user context/);
});
