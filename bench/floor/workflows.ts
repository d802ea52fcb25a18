/**
 * Temporal's own floor for a turn: a workflow with the turn's shape (the same number of local and
 * regular activities, run one after another) whose activities do nothing. Whatever a real turn takes
 * above this is the project's cost, not the engine's.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

export interface FloorShape {
  local: number;
  regular: number;
}

export interface FloorActivities {
  noop(): Promise<void>;
}

const local = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });
const regular = proxyActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

export async function floorTurn(shape: FloorShape): Promise<void> {
  for (let i = 0; i < shape.local; i++) await local.noop();
  for (let i = 0; i < shape.regular; i++) await regular.noop();
}

export { floorChainTurn, floorLedger, floorSession, floorSessionTurn } from './protocols';
export { floorIoSchedule, floorIoTurn } from './io-workflow';
