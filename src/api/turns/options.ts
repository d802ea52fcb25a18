/** What the turn service is built from: shared by every part (see index.ts). */
import type { RateLimiters } from '../rate-limits';
import type { ApiObserver } from '../../metrics';
import type { Policy } from '../../shared/policy';
import type { PushedTurn, TurnEvent } from '../../shared/turn';
import type { TurnGateway } from '../gateway';
import type { WorkerReports } from '../../health/reports';
import type { UsageLedger } from '../../usage/ledger';
import type { HostConfig } from '../../config/host-schema';

export interface TurnServiceOptions {
  gateway: TurnGateway;
  /** The tool policy in force (read per request, so a reload applies): the catalog shows each caller what their model would see. */
  policy: () => Policy;
  /** Redacts tool arguments shown to anyone but the turn's owner (an approver): the audit log's rules. */
  redactArguments: (args: unknown) => unknown;
  /** Per-user and per-tenant limits on message submission (default: in memory, 60 and 600 per minute). */
  limiters?: RateLimiters;
  /** Metrics (absent: nothing counted). */
  observer?: ApiObserver;
  /**
   * A new turn was started for its owner, `position` turns behind in its session (the live hub expects
   * its pushed events, and its streams open with that: see src/live/turn-events.ts).
   */
  onSubmitted?: (turnId: string, turn: PushedTurn, position: number) => void;
  /**
   * The owner's latest turn in the session, when the live hub saw it end a moment ago (its workflow may
   * close a moment later): a new message's position does not count it. Absent: no hub.
   */
  justEnded?: (owner: { id: string; tenant: string }, sessionId: string, withinMs: number) => string | undefined;
  /**
   * The events of `turnId` its worker pushed to this replica's hub (src/live/turn-events.ts). They come
   * as the workflow task runs, before its history records them: a question or an approval shown from
   * them may not be recorded yet (its worker died before the task completed), and an answer waits for
   * it (decisions.ts). Absent: no hub.
   */
  pushedEvents?: (turnId: string) => readonly TurnEvent[] | undefined;
  /** How long an answer to something shown but not yet recorded waits for the record (default 30 s). */
  recordedWaitMs?: number;
  /** What the workers last reported of their MCP servers: the health answer (no workflow per probe). */
  workerReports: WorkerReports;
  /** Whether this replica LISTENs on the live-text bus (readiness); absent: no bus. */
  busListening?: () => { ok: boolean; downSinceMs?: number };
  /** Token usage per turn (src/usage): daily budgets and the usage report. Absent: neither. */
  usage?: { ledger: UsageLedger; config: () => Pick<HostConfig, 'budgets' | 'prices'> };
}
