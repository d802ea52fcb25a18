/**
 * What a caller may do with turns, whatever the transport: submit (with limits and idempotency),
 * cancel, read, decide approvals, read the catalog and health. Shared by the HTTP routes and the
 * WebSocket (and any other edge: none writes its own copy); it answers with data and refuses with
 * HttpError, and never sees a reply.
 *
 * One file per job, each a factory over the same options:
 * - submission.ts: admit (rate limits, token budgets), submit (idempotency keys),
 *   submitToolCall, cancel;
 * - reads.ts: the caller's turn and its view, the caller's sessions (paged, with their last message)
 *   and turns (newest first), whether a session exists, a session's transcript, what a queued turn
 *   waits for (views.ts: who may read a turn and what they see of it);
 * - session-edits.ts: the caller's session as a resource: read, titled, deleted;
 * - decisions.ts: the approvals inbox, approval decisions, answers to servers' questions;
 * - usage-report.ts, catalog.ts, health.ts: the usage report, the tool catalog, the host's health.
 */
import { createCatalog } from './catalog';
import { createDecisions } from './decisions';
import { createHealth } from './health';
import type { TurnServiceOptions } from './options';
import { createReads } from './reads';
import { createSessionEdits } from './session-edits';
import { createSubmission } from './submission';
import { createUsageReport } from './usage-report';

export type { TurnServiceOptions } from './options';
export type { Accepted, Submission } from './submission';
export { USAGE_SCOPE } from './usage-report';
export { ownedBy, pendingApprovals, readableBy, turnView } from './views';

export type TurnService = ReturnType<typeof createTurnService>;

export function createTurnService(opts: TurnServiceOptions) {
  return {
    ...createSubmission(opts),
    ...createReads(opts),
    ...createSessionEdits(opts),
    ...createDecisions(opts),
    ...createUsageReport(opts),
    ...createCatalog(opts),
    ...createHealth(opts),
  };
}
