import { inTransaction, withConnection } from '../../src/pg/transaction';
import { usePostgres } from '../helpers/postgres';

/**
 * A connection checked out of the pool is no longer watched by the pool's error listener: the server
 * ending it meanwhile (a restart) must fail the holder's next query, never end the process with an
 * unhandled 'error' (two workers of the soak died that way when the bus's PostgreSQL restarted).
 */
jest.setTimeout(120_000);

const pg = usePostgres();

test('a held connection the server ends fails its next query; the pool serves a fresh one after the restart', async () => {
  const pool = pg.pool();
  await expect(
    withConnection(pool, async (client) => {
      await client.query('SELECT 1');
      // Idle and held: the server's "terminating connection" arrives with no query to take it.
      await pg.server().down();
      return await client.query('SELECT 1');
    }),
  ).rejects.toThrow();
  await pg.server().up();
  await expect(inTransaction(pool, async (q) => (await q('SELECT 2 AS n')).rows[0]?.['n'])).resolves.toBe(2);
});
