import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectTemporal } from '../../src/api/gateway/connection';

/**
 * Closing the API's Temporal connection while a call waits out a retry. With the SDK's own retry
 * interceptor the retry's timer fires after the close and throws "Channel has been shut down" out of
 * the timer (an uncaught exception that failed a CI run at suite teardown); here the call ends with
 * the error it had, and nothing throws later.
 *
 * The frontend is a few lines of HTTP/2: GetSystemInfo is unimplemented (the SDK's connect accepts
 * that, as from an old server) and every other method is UNAVAILABLE, which the SDK retries.
 */
const GET_SYSTEM_INFO = '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo';
let server: http2.Http2Server;
let address: string;
const calls: string[] = [];
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => void uncaught.push(err);

beforeAll(async () => {
  server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const method = String(headers[':path']);
    calls.push(method);
    stream.on('error', () => undefined);
    // Read the request to its end, then answer with a status only (a gRPC "trailers-only" response).
    stream.resume();
    stream.on('end', () => {
      const code = method === GET_SYSTEM_INFO ? '12' : '14';
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': code, 'grpc-message': 'test frontend' }, { endStream: true });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.on('uncaughtException', onUncaught);
});

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await new Promise((resolve) => server.close(resolve));
});

test('a call waiting out a retry ends with its error when the connection closes, and no retry fires on the closed channel', async () => {
  const temporal = await connectTemporal({ address });
  const before = calls.length;
  const call = temporal.connection.workflowService.describeNamespace({ namespace: 'default' });
  const settled = call.then(
    () => 'resolved',
    (err: Error & { code?: number }) => err.code,
  );
  // The first attempt reached the frontend and was refused: a retry is scheduled or about to be.
  await waitFor(() => calls.length > before);
  await temporal.close();
  await expect(settled).resolves.toBe(14);
  // Every retry already scheduled fired before the channel closed; none was made after.
  const made = calls.length;
  await new Promise((resolve) => setImmediate(resolve));
  expect(calls.length).toBe(made);
  expect(uncaught).toEqual([]);
});

test('close is idempotent and a connection with no calls closes at once', async () => {
  const temporal = await connectTemporal({ address });
  await Promise.all([temporal.close(), temporal.close()]);
  await expect(temporal.connection.workflowService.describeNamespace({ namespace: 'default' })).rejects.toThrow(/shut down|closed/i);
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
