/**
 * Negative control for the replay suite: the turn workflow with one extra step in front. Replaying a
 * real history against it must fail with a nondeterminism error, proving the suite can fail.
 */
import { sleep } from '@temporalio/workflow';
import { turnWorkflow as realTurnWorkflow } from '../../../src/workflows/turn';
import type { TurnInput, TurnState } from '../../../src/shared/turn';
import { sessionMemoryWorkflow as realSessionMemoryWorkflow } from '../../../src/workflows/session-memory';
import type { SessionMemory } from '../../../src/shared/session';

export { catalogWorkflow } from '../../../src/workflows/catalog';

export async function turnWorkflow(input: TurnInput): Promise<TurnState> {
  await sleep('1 millisecond');
  return await realTurnWorkflow(input);
}


export async function sessionMemoryWorkflow(carried: SessionMemory): Promise<SessionMemory> {
  await sleep('1 millisecond');
  return await realSessionMemoryWorkflow(carried);
}
