/**
 * Which tool calls of one LLM step may run as local activities (decision 0021). Pure: the turn
 * workflow asks it once per step, and it must answer the same on replay.
 */
import type { Policy } from '../shared/policy';
import type { UserContext } from '../shared/user';
import type { PlannedCall } from './host-loop';
import { decideTool } from './policy';

export interface CallerAccess {
  policy: Policy;
  user: UserContext;
}

/**
 * True when no call of the step goes out as a regular activity task right away (one that is not
 * read-only, is allowed, and waits for no approval). A local activity runs inside the workflow task
 * that started it, and the worker sends that task's commands only once it is done, so a regular call
 * planned beside a read-only one would start only after it: in such a step the read-only calls go
 * out as regular activities as well, and all of them run at once.
 */
export function readOnlyCallsStayLocal(planned: readonly PlannedCall[], access?: CallerAccess): boolean {
  return !planned.some((p) => {
    if (p.kind !== 'call' || p.tool.readOnly) return false;
    if (!access) return true;
    const decision = decideTool(access.policy, access.user, p.tool.server, p.tool.tool);
    return decision.allowed && !decision.needsApproval;
  });
}
