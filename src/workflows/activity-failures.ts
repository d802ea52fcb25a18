/** Reading what an activity's failure says, below the SDK's ActivityFailure wrappers. */
import { ActivityFailure } from '@temporalio/workflow';

/** The failure an activity raised itself: the first cause below the ActivityFailure wrappers. */
export function innermostCause(err: unknown): unknown {
  let current: unknown = err;
  while (current instanceof ActivityFailure && current.cause) current = current.cause;
  return current;
}

/** The innermost meaningful message of an activity failure, for users and the model. */
export function describeFailure(err: unknown): string {
  const current = innermostCause(err);
  if (current instanceof Error) return current.message;
  return String(current);
}
