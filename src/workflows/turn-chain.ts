/**
 * A turn's side of the chain of its session (docs/decisions/0033-session-protocol-floor.md), the
 * whole handshake in one place: the memory from the turn before (read beside the catalog in the first
 * workflow task), the wait for that turn when it still runs, the memory after this turn (summarized
 * when it outgrew the threshold), and the word to the turn that waits for this one.
 */
import {
  condition,
  getExternalWorkflowHandle,
  log,
  type LocalActivityInterfaceFor,
  proxyActivities,
  proxySinks,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { fallbackSummary } from '../core/history';
import { EMPTY_MEMORY, historyOf, memoryAfter, summarized } from '../core/memory';
import type { TurnRecord } from '../core/turn-record';
import { NON_RETRYABLE } from '../shared/failures';
import type { ChainInput, PredecessorEnded, PredecessorSeen, TurnMemory } from '../shared/session';
import type { CatalogRefs } from '../shared/tool-types';
import type { ChatMessage } from '../shared/turn';
import { followedBySignal, predecessorEndedSignal, type SessionSinks } from './definitions';

/** A running turn before this one is asked again after this long without its word, then twice as long. */
const FIRST_CHECK_MS = 60_000;
const LONGEST_CHECK_MS = 10 * 60_000;
/** A turn before that does not exist is looked for again after these multiples of 1 s, then passed over. */
const MISSING_CHECKS = [1, 5, 15];
/** Longest summary kept; the summarizer is asked for less, the fallback is cut to this. */
const MAX_SUMMARY_CHARS = 4_000;

export interface ChainDeps {
  turnId: string;
  sessionId: string;
  /** The session-link local activities. */
  sessionLink: LocalActivityInterfaceFor<Activities>;
  listToolRefs(): Promise<CatalogRefs>;
  emit: TurnRecord['emit'];
}

/** The conversation so far, and the catalog when it was listed beside the memory (no wait between). */
export interface ChainGo {
  memory: TurnMemory;
  history: ChatMessage[];
  catalog?: Promise<CatalogRefs>;
}

/**
 * Registers the chain's signals (call it before the workflow's first await) and returns the turn's
 * two moments: `go` (its memory, once the turn before has ended) and `ended` (its memory after).
 */
export function turnChain(chain: ChainInput, deps: ChainDeps) {
  const { sessionLink, emit } = deps;
  const { session } = proxySinks<SessionSinks>();
  let follower: string | undefined;
  /** Set once the turn has ended: what its follower gets (its memory, when it had one). */
  let word: PredecessorEnded | undefined;
  let waitingFor: string | undefined;
  let heard: PredecessorEnded | undefined;

  setHandler(followedBySignal, ({ turnId }) => {
    follower = turnId;
    // The turn ended before the signal came (it arrived with the last workflow task): answer now.
    if (word) session.predecessorEnded(turnId, word);
  });
  setHandler(predecessorEndedSignal, (ended) => {
    if (ended.turnId === waitingFor) heard = ended;
  });

  const ask = (skip: string[]): Promise<PredecessorSeen> =>
    sessionLink.predecessorMemory.executeWithOptions({ summary: 'read the memory of the turn before' }, [{ after: chain.after, skip, ...(chain.legacySession ? { legacySession: chain.legacySession } : {}) }]);

  /** Its memory, once every earlier turn of the session has ended. */
  async function go(): Promise<ChainGo> {
    // The turn before handed its memory on through the API, or there is none: nothing to read, nothing to wait for.
    const handed = chain.first ? EMPTY_MEMORY : chain.handedOn && chain.handedOn.turnId === chain.after[0] ? chain.handedOn.memory : undefined;
    const skip: string[] = [];
    const first = handed ? undefined : ask(skip);
    // Both local activities of the first workflow task: no round trip of its own for the memory.
    const listed = deps.listToolRefs();
    listed.catch(() => undefined);
    if (handed) return { memory: handed, history: historyOf(handed, chain.history), catalog: listed };
    let seen = await (first as Promise<PredecessorSeen>);
    let waited = false;
    let misses = 0;
    let checkMs = chain.checkMs ?? FIRST_CHECK_MS;
    const missingPauses = MISSING_CHECKS.map((n) => n * (chain.missingCheckMs ?? 1_000));
    const begin = (memory: TurnMemory | undefined): ChainGo => {
      const m = memory ?? EMPTY_MEMORY;
      return { memory: m, history: historyOf(m, chain.history), ...(waited ? {} : { catalog: listed }) };
    };
    for (;;) {
      if (seen.state === 'ended') return begin(seen.memory);
      if (!waited) emit('status', { status: 'running', phase: 'queued' });
      waited = true;
      if (seen.state === 'missing') {
        // Its start may be a moment late (another request of the same session); one that never comes is passed over.
        const pause = missingPauses[misses++];
        if (pause === undefined) {
          log.warn('the turn before never started; passing over it', { predecessorId: seen.turnId });
          skip.push(seen.turnId);
          misses = 0;
        } else {
          await sleep(pause);
        }
        seen = await ask(skip);
        continue;
      }
      misses = 0;
      waitingFor = seen.turnId;
      heard = undefined;
      try {
        await getExternalWorkflowHandle(seen.turnId).signal(followedBySignal, { turnId: deps.turnId });
      } catch {
        // It closed meanwhile: read how it ended.
        seen = await ask(skip);
        continue;
      }
      if (await condition(() => heard !== undefined, checkMs)) {
        const memory = (heard as PredecessorEnded | undefined)?.memory;
        if (memory) return begin(memory);
      } else {
        checkMs = Math.min(checkMs * 2, LONGEST_CHECK_MS);
      }
      seen = await ask(skip);
    }
  }

  const summarizer = proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '1 second', maximumInterval: '10 seconds', nonRetryableErrorTypes: [...NON_RETRYABLE.llm] },
  });

  /**
   * The memory after a completed exchange, its oldest part summarized when it outgrew the threshold
   * (`settle`). Call it before the stream's `done` goes out: a memory that needs no summary is handed
   * on to the API at once, so the API has it when it hears the turn's end.
   */
  function after(before: TurnMemory, request: string, answer: string): { settle(): Promise<TurnMemory> } {
    const { memory, fold } = memoryAfter(before, request, answer, chain.history);
    if (fold.length === 0) {
      handOn(memory);
      return { settle: () => Promise.resolve(memory) };
    }
    return { settle: () => summarize(memory, fold) };
  }

  async function summarize(memory: TurnMemory, fold: ChatMessage[]): Promise<TurnMemory> {
    try {
      const result = await summarizer.summarizeConversation.executeWithOptions(
        { summary: `summarize ${fold.length} older messages` },
        [{ sessionId: deps.sessionId, previousSummary: memory.summary, messages: fold, maxChars: MAX_SUMMARY_CHARS }],
      );
      return summarized(memory, fold, result.summary.slice(0, MAX_SUMMARY_CHARS));
    } catch (err) {
      log.warn('summarizing failed; keeping an extract instead', { error: err instanceof Error ? err.message : String(err) });
      return summarized(memory, fold, fallbackSummary(memory.summary, fold, MAX_SUMMARY_CHARS));
    }
  }

  /** To the API, once: the next message of the session starts its turn with it (ChainInput.handedOn). A sink: no history. */
  let handed = false;
  function handOn(memory: TurnMemory): void {
    if (handed) return;
    handed = true;
    session.handedOn(deps.turnId, memory);
  }

  /**
   * The turn ended (however it did): its follower, if one waits, hears it now, with `memory` if any,
   * and so does the API (`handOn`).
   */
  function ended(memory: TurnMemory | undefined): void {
    word = { turnId: deps.turnId, ...(memory ? { memory } : {}) };
    if (follower) session.predecessorEnded(follower, word);
    if (memory) handOn(memory);
  }

  return { go, after, ended };
}
