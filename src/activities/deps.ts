/** What the activities are built from: the worker's long-lived dependencies (./index.ts, ./llm.ts). */
import type { AuditSink } from '../audit';
import type { AdaptiveContextSettings } from '../core/adaptive-context';
import type { ToolSearchSettings } from '../core/tool-search';
import type { LlmClient } from '../llm/client';
import type { LivePublisher } from '../live/publisher';
import type { Logger } from '../logger';
import type { McpContextSource } from '../mcp/context-source';
import type { McpHub } from '../mcp/types';
import type { WorkerObserver } from '../metrics';
import type { AttemptUsageRecorder } from '../usage/attempt-usage';
import type { SessionLink } from './session-link';
import type { ElicitationAnswer, InputAsked } from '../shared/user-input';

export interface ArgumentCheck {
  validate(schema: Record<string, unknown>, args: unknown): { ok: true } | { ok: false; message: string };
}

/** A tool call's way to its turn while it holds a server's question open (src/input-link.ts). */
export interface InputLink {
  /**
   * Tells the turn `question` waits on `toolCallId` and waits for the owner's answer (one `matches`
   * accepts) until `until` (performance.now() time) or `signal`; undefined when none came in time.
   */
  hold(args: { workflowId: string; toolCallId: string; question: InputAsked; matches: (a: ElicitationAnswer) => boolean; until: number; signal: AbortSignal }): Promise<ElicitationAnswer | undefined>;
  /**
   * Whether an earlier attempt of the call held a question its answer never went to: the server was
   * still asking (it acts after its questions: decision 0011), so the call may be sent again.
   */
  heldUntaken(workflowId: string, toolCallId: string): Promise<boolean>;
}

export interface ActivityDeps {
  /** Append-only audit log; without one, nothing is audited (tests of other concerns). */
  audit?: AuditSink;
  hub: McpHub & McpContextSource;
  /** The worker's default model. */
  llm: LlmClient;
  /** The host config's named models (`models`), for requests that name one; absent: only the default. */
  models?: ReadonlyMap<string, LlmClient>;
  validator: ArgumentCheck;
  logger: Logger;
  /** Values that must never leave the worker (keys, tokens); scrubbed from error messages. */
  secrets: readonly string[];
  /**
   * The host config's maxToolResultChars: a tool result is cut to it before the activity returns
   * (src/mcp/render.ts boundToolOutcome); absent: returned whole, the turn cuts it.
   */
  maxToolResultChars?: () => number;
  /** The host config's toolSearch (reloaded): when a catalog is searched instead of offered whole; absent: the defaults. */
  toolSearch?: () => ToolSearchSettings;
  /** The host config's adaptiveContext (reloaded): whether the model gets the host's resource tools, and their bounds; absent: off. */
  adaptiveContext?: () => AdaptiveContextSettings;
  /** How often a long call heartbeats even without progress, so a dead worker is noticed quickly. */
  heartbeatEveryMs?: number;
  /** This worker in tool calls' heartbeat details (default: the SDK's default identity, pid@host). */
  workerId?: string;
  /** Where LLM text deltas go while they stream (to the API's live hub); never part of history. */
  live?: LivePublisher;
  /** Opens a sealed user token (undefined when it cannot); absent when no seal key is configured. */
  unsealToken?: (sealed: string) => string | undefined;
  /** Call counts and latencies for the worker's /metrics. */
  metrics?: WorkerObserver;
  /** Records each model call attempt's tokens in the usage ledger (src/usage/attempt-usage.ts); absent: not recorded. */
  usage?: AttemptUsageRecorder;
  /** Session and turn workflows, for turns the API started beside their session; absent: such turns fail to join. */
  sessions?: SessionLink;
  /** Lets a tool call hold a server's question open while the user answers; absent: every question goes by re-issue. */
  inputs?: InputLink;
}

