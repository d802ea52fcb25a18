import { HttpError } from '../errors';
import { SYSTEM_MESSAGES } from '../system-messages';

/** Temporal being unreachable is the service's problem, not the caller's: answer 503, not 500. */
export async function unavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const e = new HttpError(503, 'unavailable', `${SYSTEM_MESSAGES.MAINTENANCE} (The workflow service is unreachable; try again shortly.)`);
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
}
