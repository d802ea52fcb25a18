/**
 * What a turn is doing right now, in one line an operator reads in the Temporal UI (the workflow's
 * "current details"): "awaiting approval of payments__refund_payment", "asking the user (school)",
 * "calling 2 tools: notes__add_note, everything__echo". Built from the turn's own events, so it
 * holds names of tools and servers only, never what the user wrote or a tool returned: it stays in
 * clear when payloads are encrypted (docs/decisions/0019-payload-encryption.md). Pure.
 */
import type { TurnEvent } from '../shared/turn';

export interface TurnPhase {
  /** Takes the next event of the turn; answers the phase line when it changed, else undefined. */
  observe(event: Pick<TurnEvent, 'type' | 'data'>): string | undefined;
  readonly current: string;
}

/** Names listed in one line at most; the rest are counted. */
const MAX_NAMES = 3;

export function createTurnPhase(): TurnPhase {
  const approvals = new Map<string, string>();
  const questions = new Map<string, string>();
  const consents = new Map<string, string>();
  const running = new Map<string, string>();
  let status = 'starting';
  let ended: string | undefined;
  let current = status;

  const describe = (): string => {
    if (ended) return ended;
    if (approvals.size > 0) return `awaiting approval of ${names(approvals)}`;
    if (questions.size > 0) return `asking the user (${names(questions)})`;
    if (consents.size > 0) return `awaiting the user's authorization of ${names(consents)}`;
    if (running.size > 0) return `calling ${running.size === 1 ? '1 tool' : `${running.size} tools`}: ${names(running)}`;
    return status;
  };

  return {
    get current() {
      return current;
    },
    observe({ type, data }) {
      const id = String(data.toolCallId ?? '');
      switch (type) {
        case 'status':
          status = statusLine(data);
          break;
        case 'approval_required':
          approvals.set(id, String(data.name ?? data.tool ?? 'a tool'));
          break;
        case 'approval_decided':
          approvals.delete(id);
          break;
        case 'input_required':
          questions.set(id, String(data.server ?? 'a server'));
          break;
        case 'input_provided':
          questions.delete(id);
          break;
        case 'authorization_required':
          consents.set(id, String(data.server ?? 'a server'));
          break;
        case 'authorization_completed':
          consents.delete(id);
          break;
        case 'tool_call_started':
          running.set(id, String(data.name ?? 'a tool'));
          break;
        case 'tool_call_finished':
          running.delete(id);
          break;
        case 'done':
          ended = 'completed';
          break;
        case 'error':
          ended = `failed (${String(data.code ?? 'error')})`;
          break;
        case 'cancelled':
          ended = 'cancelled';
          break;
        default:
          return undefined;
      }
      const next = describe();
      if (next === current) return undefined;
      current = next;
      return next;
    },
  };
}

function statusLine(data: Record<string, unknown>): string {
  switch (data.phase) {
    case 'queued':
      return 'queued behind the previous turn of its session';
    case 'gathering_context':
      return 'gathering context';
    case 'calling_llm':
      return `calling the model (step ${String(data.step ?? 1)})`;
    case 'calling_tools':
      return `step ${String(data.step ?? 1)}: calling tools`;
    default:
      return typeof data.phase === 'string' ? data.phase.replace(/_/g, ' ') : 'running';
  }
}

/** A few distinct values of the map, in insertion order, then how many more. */
function names(map: Map<string, string>): string {
  const distinct = [...new Set(map.values())];
  const shown = distinct.slice(0, MAX_NAMES).join(', ');
  return distinct.length > MAX_NAMES ? `${shown} and ${distinct.length - MAX_NAMES} more` : shown;
}
