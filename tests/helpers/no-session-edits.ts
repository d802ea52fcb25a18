import type { TurnGateway } from '../../src/api/gateway';

/**
 * The gateway's session edits for fakes that hold no session index: every session is unknown (no
 * title, nothing to rename or delete). tests/api/session-edits.test.ts tests them over the real index.
 */
export const noSessionEdits: Pick<TurnGateway, 'sessionSummary' | 'renameSession' | 'deleteSession'> = {
  sessionSummary: async () => null,
  renameSession: async () => null,
  deleteSession: async () => false,
};
