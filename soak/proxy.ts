import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * The soak's balancer: a TCP round robin over the API replicas (HTTP, SSE and WebSocket pass through
 * untouched). A connection goes to the next replica that accepts it; a replica that refuses is
 * skipped; a replica killed under a connection closes it, and the client reconnects (through here, to
 * a replica that is up). The deployment's balancer (Caddy, docs/decisions/0030-soak.md) does the same.
 */
export interface Proxy {
  url: string;
  /** The replicas' ports, replaced as replicas restart on new ports. */
  backends: number[];
  connections(): number;
  close(): Promise<void>;
}

export async function startProxy(backends: number[]): Promise<Proxy> {
  let next = 0;
  const open = new Set<Socket>();
  const connect = (client: Socket, tries: number): void => {
    if (tries >= proxy.backends.length || client.destroyed) {
      client.destroy();
      return;
    }
    const port = proxy.backends[next++ % proxy.backends.length] ?? 0;
    const upstream = createConnection({ host: '127.0.0.1', port });
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      open.add(upstream);
      client.once('close', () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected) connect(client, tries + 1);
      else client.destroy();
    });
    upstream.on('close', () => {
      open.delete(upstream);
      if (connected) client.destroy();
    });
  };
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.on('error', () => undefined);
    client.on('close', () => open.delete(client));
    connect(client, 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const proxy: Proxy = {
    url: `http://127.0.0.1:${port}`,
    backends: [...backends],
    connections: () => open.size,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
