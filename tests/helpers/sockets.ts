import { readFileSync } from 'node:fs';

// Linux TCP states in /proc/net/tcp: 01 ESTABLISHED, 08 CLOSE_WAIT (the peer closed, this end has not).
const OPEN_STATES = new Set(['01', '08']);

/**
 * How many sockets of this machine are connected to `port` on 127.0.0.1 and not yet closed at their
 * own end: established, or told by the peer that it closed (CLOSE_WAIT) but not yet closed by the
 * process that holds them. Zero means every client of that port has seen its connection end.
 */
export function openSocketsTo(port: number): number {
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const remotePort = cols[2]?.split(':')[1];
      if (remotePort && parseInt(remotePort, 16) === port && OPEN_STATES.has(cols[3] ?? '')) n++;
    }
  }
  return n;
}
