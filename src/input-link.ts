/**
 * Wiring: the worker's Temporal client behind a tool call that holds a server's question open for the
 * user (src/mcp/elicitation.ts, issue 22 §2). The activity tells its turn what was asked
 * (`inputAsked`), looks for the owner's answer (`inputAnswer`) until it comes or the hold runs out, and
 * takes it (`inputTaken`, in the turn's history) before the server hears it.
 */
import { type Client, QueryNotRegisteredError, WorkflowNotFoundError } from '@temporalio/client';
import type { InputLink } from './activities/deps';
import { inputAnswerQuery, inputAskedSignal, inputTakenUpdate } from './workflows/definitions';

/** How often a held question looks for its answer: a user's answer reaches the server this much later at most. */
const LOOK_EVERY_MS = 250;

/**
 * How long a later attempt keeps asking its turn whether the attempt before held a question, before it
 * fails (retryably): under the tool call's 10 s heartbeat timeout, as it does not beat meanwhile. Right
 * after a worker died, the turn may not answer at once (its next task waits on the dead worker's queue,
 * then a new worker replays it).
 */
const ASK_TURN_FOR_MS = 5_000;

export function createInputLink(client: Pick<Client, 'workflow'>): InputLink {
  return {
    async hold({ workflowId, toolCallId, question, matches, until, signal }) {
      const turn = client.workflow.getHandle(workflowId);
      try {
        await turn.signal(inputAskedSignal, { toolCallId, question });
        while (!signal.aborted && performance.now() < until) {
          const held = await turn.query(inputAnswerQuery, { toolCallId });
          // Taken through an update, recorded before the server hears it: an attempt after this one
          // then knows the server may have acted on it.
          if (held?.answer && matches(held.answer)) return await turn.executeUpdate(inputTakenUpdate, { args: [{ toolCallId }] });
          await pause(Math.min(LOOK_EVERY_MS, Math.max(0, until - performance.now())), signal);
        }
      } catch {
        // A turn that cannot be told or read (Temporal unreachable, a turn of a version without the
        // handlers): the call falls back to asking by re-issue, which needs neither.
      }
      return undefined;
    },

    async heldUntaken(workflowId, toolCallId) {
      const giveUpAt = performance.now() + ASK_TURN_FOR_MS;
      for (;;) {
        try {
          const held = await client.workflow.getHandle(workflowId).query(inputAnswerQuery, { toolCallId });
          return held !== null && !held.taken;
        } catch (err) {
          // A turn without the handler (an older version) or gone holds no question.
          if (err instanceof QueryNotRegisteredError || err instanceof WorkflowNotFoundError) return false;
          // One that cannot answer now is asked again: "no question held" would end a call whose
          // question the user is about to answer as "outcome unknown". Past the deadline the attempt
          // fails, and the next one asks again.
          if (performance.now() >= giveUpAt) throw err;
          await pause(LOOK_EVERY_MS, new AbortController().signal);
        }
      }
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
