import type { TemporalDevServer } from '../../src/cli/processes';
import { startOnFreshPorts } from '../helpers/system';

/** The suites' dev servers start again on fresh ports when a port picked free was taken before they bound it. */
const server = { address: '127.0.0.1:1' } as TemporalDevServer;
const exited = new Error('temporal dev server exited with code 1:\n... bind: address already in use');

test('a start that exits is tried again, up to three times in all; any other failure is not', async () => {
  const attempts: number[] = [];
  await expect(startOnFreshPorts((n) => (attempts.push(n), n < 3 ? Promise.reject(exited) : Promise.resolve(server)))).resolves.toBe(server);
  expect(attempts).toEqual([1, 2, 3]);

  let tries = 0;
  await expect(startOnFreshPorts(() => (tries++, Promise.reject(exited)))).rejects.toThrow('exited with code 1');
  expect(tries).toBe(3);

  tries = 0;
  await expect(startOnFreshPorts(() => (tries++, Promise.reject(new Error('no such file: temporal'))))).rejects.toThrow('no such file');
  expect(tries).toBe(1);
});
