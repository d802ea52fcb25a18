import type { SessionMemory } from '../shared/session';

/**
 * The memory of a session begun in a session workflow (decision 0016), once migrated (decision 0041):
 * started under that workflow's id with what it held, it returns it at once and closes. Its result is
 * what the session's first turn of the chain reads, and the API's view of the session's older messages.
 */
export async function sessionMemoryWorkflow(carried: SessionMemory): Promise<SessionMemory> {
  return await Promise.resolve(carried);
}
