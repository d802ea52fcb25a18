/**
 * What a server asks the user during a tool call (elicitation, a URL to open, a use of the host's
 * model), the user's answers, and what a call's server may ask of the host's model: the types the
 * turn, its activities, the MCP client and the API share about them.
 */
/** How long a turn waits for the user to answer a server's question (elicitation) before cancelling it. */
export const INPUT_WAIT_MS = 10 * 60_000;

/**
 * How a question is answered: `form` fills in `requestedSchema`; `url` asks the user to open `url`
 * (a page of the server's, e.g. a payment or a third-party sign-in; `accept` means they went there);
 * `sampling` asks whether the server may use the host's model for the request `message` shows.
 */
export type InputMode = 'form' | 'url' | 'sampling';

/** What a server asked the user during a tool call. */
export interface InputAsked {
  /** Absent: `form` (turns recorded before the other modes). */
  mode?: InputMode;
  message: string;
  /** The form to fill in; an empty object schema for `url` and `sampling` (the answer has no content). */
  requestedSchema: Record<string, unknown>;
  /** `url` mode: where the user is sent. Never carries a secret of ours: the server chose it. */
  url?: string;
}

/** The user's answer to one question, as the turn records it and hands it back to the re-issued call. */
export interface ElicitationAnswer {
  /** The question it answers (the re-issued call's questions are matched by it, with mode and url). */
  message: string;
  mode?: InputMode;
  url?: string;
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

/** Whether two questions are the same (a re-issued call's answers are matched by message, mode and url). */
export function sameQuestion(a: Pick<ElicitationAnswer, 'message' | 'mode' | 'url'>, b: Pick<ElicitationAnswer, 'message' | 'mode' | 'url'>): boolean {
  return a.message === b.message && (a.mode ?? 'form') === (b.mode ?? 'form') && a.url === b.url;
}

/** The schema of a question answered without content (`url` and `sampling` modes). */
export const NO_CONTENT_SCHEMA: Record<string, unknown> = { type: 'object', properties: {} };

/**
 * What one tool call's server may ask of the host's model (sampling), from the policy's `sampling`:
 * the longest completion per request and the tokens left in the turn's budget.
 */
export interface SamplingAllowance {
  maxTokens: number;
  budgetTokens: number;
  /** Each request waits for the turn's user to allow it (policy `sampling.approval`). */
  approval?: boolean;
}

/** The owner's answer, through the turn's update; the API has validated `content` against the schema. */
export interface ProvideInput {
  toolCallId: string;
  action: ElicitationAnswer['action'];
  content?: ElicitationAnswer['content'];
  by: { id: string; tenant: string };
}
