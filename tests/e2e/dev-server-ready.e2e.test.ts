import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, startTemporalDevServer } from '../../src/cli/processes';
import { temporalCli } from '../helpers/system';

/**
 * A port found free can be taken by another process before the dev server binds it; the server then
 * exits at once. A start that counted it ready when something answered on its gRPC port handed out the
 * other process's address, which refused connections once that process closed it. Ready now means the
 * dev server's own HTTP API and /metrics answer: the start fails as "exited", which the suites'
 * fresh-port retry takes again.
 */
let dir: string;
let holder: Server | undefined;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-ready-'));
});
afterEach(async () => {
  if (holder) await new Promise((resolve) => holder?.close(resolve));
  holder = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function hold(): Promise<number> {
  const port = await freePort();
  const server = createServer();
  holder = server;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return port;
}

test('its gRPC port taken by another listener: the start fails as an exit, not as ready', async () => {
  const taken = await hold();
  const start = startTemporalDevServer({ cli: temporalCli(), dbFile: path.join(dir, 'temporal.db'), port: taken });
  await expect(start).rejects.toThrow(/exited with code 1[^]*address already in use/);
}, 90_000);

test('on free ports it is ready with its HTTP API and its /metrics answering', async () => {
  const metricsPort = await freePort();
  const server = await startTemporalDevServer({ cli: temporalCli(), dbFile: path.join(dir, 'temporal.db'), port: await freePort(), metricsPort });
  try {
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
  } finally {
    await server.proc.stop(5_000);
  }
}, 90_000);
