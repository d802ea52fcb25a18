import { followSse, readTurn, submit, WsSession, type TurnSeen } from './streams';

/**
 * The soak's users: each runs sessions of several turns (the school patterns) until the run's end,
 * half of them over SSE and half over a WebSocket, every third turn dropping its stream once on
 * purpose; a second client (an approver) answers every approval the refunds ask for.
 */
export type TurnKind = 'count' | 'pay' | 'refund' | 'long' | 'status';

export interface TurnRecord extends TurnSeen {
  user: number;
  kind: TurnKind;
  via: 'sse' | 'ws';
  sessionId: string;
  submittedAt: number;
  endedAt?: number;
}

export interface UserOptions {
  base: string;
  token: (sub: string) => Promise<string>;
  /** Whether to start another turn; once false, a turn in flight has until `drainUntil`. */
  going: () => boolean;
  drainUntil: () => number;
  turns: TurnRecord[];
  /** Stop after this many sessions (the warm-up runs one). */
  maxSessions?: number;
}

/** Letters only (the payment and refund scripts match a name of letters), equal length, all distinct. */
export function studentName(i: number): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  return `Soak${letters[Math.floor(i / 676) % 26] ?? 'a'}${letters[Math.floor(i / 26) % 26] ?? 'a'}${letters[i % 26] ?? 'a'}`;
}

const SESSION: Array<{ kind: TurnKind; text: (name: string) => string }> = [
  { kind: 'count', text: () => 'How many students do we have?' },
  { kind: 'pay', text: (n) => `Process payment for student ${n}` },
  { kind: 'refund', text: (n) => `Refund ${n}'s payment` },
  { kind: 'long', text: () => 'long story please' },
  { kind: 'status', text: () => 'Full system status' },
];

export async function runUser(user: number, opts: UserOptions): Promise<void> {
  const via = user % 2 === 0 ? 'sse' : 'ws';
  const token = await opts.token(`soak-user-${user}`);
  const name = studentName(user);
  let n = 0;
  for (let s = 0; opts.going() && s < (opts.maxSessions ?? Infinity); s++) {
    const sessionId = `soak-${user}-${s}`;
    const ws = via === 'ws' ? new WsSession(opts.base, token, sessionId) : undefined;
    try {
      for (const step of SESSION) {
        if (!opts.going()) break;
        const rec: TurnRecord = { user, kind: step.kind, via, sessionId, submittedAt: Date.now(), outcome: 'lost', ids: [], reconnects: 0 };
        opts.turns.push(rec);
        const key = `soak-${user}-${s}-${step.kind}-${n}`;
        const drop = n++ % 3 === 2;
        if (ws) await ws.turn(step.text(name), key, rec, opts.drainUntil(), drop);
        else {
          const posted = await submit(opts.base, token, sessionId, step.text(name), key, opts.drainUntil());
          if (posted.refused !== undefined) {
            rec.outcome = 'refused';
            rec.reason = posted.refused;
            if (posted.unanswered) rec.unanswered = true;
          } else {
            rec.turnId = posted.turnId;
            await followSse(opts.base, token, rec, opts.drainUntil(), drop);
          }
        }
        rec.endedAt = Date.now();
        if (rec.turnId) await readTurn(opts.base, token, rec, opts.drainUntil());
      }
    } finally {
      ws?.close();
    }
  }
}

/** The second client: an admin who approves whatever waits in GET /v1/approvals, until `stop()`. */
export function startApprover(base: string, token: string): { decided: () => number; stop: () => Promise<void> } {
  let running = true;
  let decided = 0;
  const headers = { authorization: `Bearer ${token}` };
  const loop = (async () => {
    while (running) {
      try {
        const res = await fetch(`${base}/v1/approvals`, { headers, signal: AbortSignal.timeout(10_000) });
        const body = (await res.json()) as { approvals?: Array<{ decideUrl: string }> };
        for (const a of body.approvals ?? []) {
          const url = a.decideUrl.startsWith('/') ? `${base}${a.decideUrl}` : a.decideUrl;
          const r = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ approve: true }), signal: AbortSignal.timeout(10_000) });
          if (r.status === 200) decided++;
        }
      } catch {
        // A replica went down under the request: the next round asks the other.
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    decided: () => decided,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
