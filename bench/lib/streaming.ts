/**
 * Helpers for the streaming section: a client that sends a message through the HTTP API and follows
 * the turn's SSE stream with a timestamp on every step, the direct baseline (the `openai` client
 * streaming straight from the demo model), and history counts of turn and session workflows.
 *
 * Times are `performance.now()` offsets from just before the POST (or the direct request). Turn
 * history timestamps (server clock) are placed on the same axis through `Date.now()` taken at the
 * same instant; server and bench run on one machine, so the clocks agree to well under a millisecond.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { DemoModelHandle } from '../../src/demo-model/server';
import { parseSseBlock, takeSseBlocks } from '../../src/shared/sse';

const E = temporal.api.enums.v1.EventType;


export interface TimedApiTurn {
  turnId: string;
  /** `Date.now()` just before the POST: the zero of every other field, for server timestamps. */
  t0Epoch: number;
  /** POST answered (body read). */
  postMs: number;
  /** SSE response headers received (the route writes them after its first describe + query). */
  sseHeadersMs: number;
  /**
   * First SSE event of any kind (comments and the `retry:` line do not count): the API's opening `turn`
   * event (no id) since the stream opens with one.
   */
  firstEventMs: number;
  firstEventType: string;
  /** First durable event (one with an `id`: from the turn's workflow, through the worker's push or a read). */
  firstDurableMs: number;
  firstDurableType: string;
  /** First `text_delta`; undefined when none arrived (the final `text` event still carries the answer). */
  firstDeltaMs: number | undefined;
  /** `done` (or `error`) event. */
  endMs: number;
  endEvent: string;
  deltas: number;
  /** Events with an `id`. */
  durableEvents: number;
  /** Live text rebuilt from text_delta offsets (last attempt). */
  liveText: string;
  /** The durable final text (`text` event). */
  finalText: string | undefined;
  /** SSE connections that did not answer 200 before one did (each retried at once). */
  sseRetries: number;
}

/**
 * What a browser client does: POST the message, open the turn's event stream as soon as the POST
 * answers, read until `done`. Every step is timed from just before the POST.
 */
export async function timedApiTurn(apiUrl: string, token: string, sessionId: string, text: string, timeoutMs = 60_000): Promise<TimedApiTurn> {
  const auth = { authorization: `Bearer ${token}` };
  const t0Epoch = Date.now();
  const t0 = performance.now();
  const since = (): number => performance.now() - t0;
  const post = await fetch(`${apiUrl}/v1/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ text }),
  });
  const body = (await post.json()) as Record<string, unknown>;
  const postMs = since();
  if (post.status !== 202) throw new Error(`POST answered ${post.status}: ${JSON.stringify(body)}`);
  const turnId = body['turnId'] as string;
  const eventsUrl = `${apiUrl}${body['eventsUrl'] as string}`;

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let sseRetries = 0;
  let sseHeadersMs = Number.NaN;
  let firstEventMs = Number.NaN;
  let firstEventType = '';
  let firstDurableMs = Number.NaN;
  let firstDurableType = '';
  let firstDeltaMs: number | undefined;
  let endMs = Number.NaN;
  let endEvent = '';
  let deltas = 0;
  let durableEvents = 0;
  let liveText = '';
  let finalText: string | undefined;
  try {
    let res: Response;
    for (;;) {
      res = await fetch(eventsUrl, { headers: { accept: 'text/event-stream', ...auth }, signal: controller.signal });
      if (res.status === 200 && res.body) break;
      await res.arrayBuffer().catch(() => undefined);
      if (++sseRetries > 50) throw new Error(`SSE ${eventsUrl}: HTTP ${res.status} 50 times`);
    }
    sseHeadersMs = since();
    const decoder = new TextDecoder();
    let buffer = '';
    reading: for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      const at = since();
      const taken = takeSseBlocks(buffer + decoder.decode(chunk, { stream: true }));
      buffer = taken.rest;
      for (const block of taken.blocks) {
        const e = parseSseBlock(block);
        if (!e) continue;
        if (Number.isNaN(firstEventMs)) {
          firstEventMs = at;
          firstEventType = e.event;
        }
        if (e.id !== undefined) {
          durableEvents += 1;
          if (Number.isNaN(firstDurableMs)) {
            firstDurableMs = at;
            firstDurableType = e.event;
          }
        }
        if (e.event === 'text_delta') {
          firstDeltaMs ??= at;
          deltas += 1;
          const offset = e.data['offset'] as number;
          liveText = liveText.slice(0, offset) + (e.data['text'] as string);
        } else if (e.event === 'text_reset') {
          liveText = '';
        } else if (e.event === 'text') {
          finalText = e.data['text'] as string;
        }
        if (e.event === 'done' || e.event === 'error') {
          endMs = at;
          endEvent = e.event;
          controller.abort();
          break reading;
        }
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
  }
  if (endEvent !== 'done') throw new Error(`turn ${turnId}: stream ended with ${endEvent || 'no done event'} after ${since().toFixed(0)} ms`);
  return {
    turnId, t0Epoch, postMs, sseHeadersMs, firstEventMs, firstEventType, firstDurableMs, firstDurableType, firstDeltaMs, endMs, endEvent,
    deltas, durableEvents, liveText, finalText, sseRetries,
  };
}

// ------------------------------------------------------------------------------------ direct baseline

export type ChatBody = ChatCompletionCreateParamsStreaming;

/** The body the worker's LLM activity sent for the message tagged `tag` (the demo model records requests). */
export function recordedLlmRequest(model: DemoModelHandle, tag: string): { body: ChatBody; atEpoch: number } {
  const requests = model.requests();
  for (let i = requests.length - 1; i >= 0; i--) {
    const r = requests[i];
    if (!r || !r.path.endsWith('/chat/completions')) continue;
    const body = r.body as ChatBody | undefined;
    const messages = body?.messages ?? [];
    const last = messages[messages.length - 1];
    if (last?.role === 'user' && typeof last.content === 'string' && last.content.endsWith(` ${tag}`)) {
      return { body: body as ChatBody, atEpoch: r.at };
    }
  }
  throw new Error(`the demo model recorded no LLM request for ${tag}`);
}

export interface DirectResult {
  /** Request sent → first chunk with text content. */
  ttftMs: number;
  totalMs: number;
  text: string;
}

/** Streams `body` straight from the model with the `openai` client; first content chunk and end are timed. */
export async function directStream(openai: OpenAI, body: ChatBody): Promise<DirectResult> {
  const t0 = performance.now();
  const stream = await openai.chat.completions.create({ ...body, stream: true });
  let ttftMs = Number.NaN;
  let text = '';
  // Read to the end, like the activity does, so both paths leave the model and the connection alike.
  for await (const chunk of stream) {
    const content = chunk.choices[0]?.delta?.content;
    if (content) {
      if (Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
      text += content;
    }
  }
  return { ttftMs, totalMs: performance.now() - t0, text };
}

export function directClient(model: DemoModelHandle): OpenAI {
  // As the worker's client (src/llm/client.ts): no SDK retries, one long-lived client with keep-alive.
  return new OpenAI({ baseURL: model.url, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000 });
}

// ------------------------------------------------------------------------------------ histories

function toMs(ts: temporal.api.history.v1.IHistoryEvent['eventTime']): number {
  if (!ts) return Number.NaN;
  return Number(ts.seconds ?? 0) * 1000 + (ts.nanos ?? 0) / 1e6;
}

export interface TurnTimeline {
  historyEvents: number;
  historyBytes: number;
  /** Offsets from the turn's t0 (ms), read from the turn workflow's history (server clock). */
  started: number;
  /** The session's go (beginTurn signal) reached the turn. */
  begun: number;
  llmScheduled: number;
  llmStarted: number;
}

/** The turn workflow's history: size, and when the steps before the first token happened. */
export async function turnTimeline(client: Client, turnId: string, t0Epoch: number): Promise<TurnTimeline> {
  const history = await client.workflow.getHandle(turnId).fetchHistory();
  const events = history.events ?? [];
  const at = (e: temporal.api.history.v1.IHistoryEvent): number => toMs(e.eventTime) - t0Epoch;
  let started = Number.NaN;
  let begun = Number.NaN;
  let llmScheduled = Number.NaN;
  let llmStarted = Number.NaN;
  let llmScheduledId: number | undefined;
  for (const e of events) {
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) started = at(e);
    else if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && Number.isNaN(begun)) begun = at(e);
    else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && llmScheduledId === undefined) {
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'callLlm') {
        llmScheduledId = Number(e.eventId);
        llmScheduled = at(e);
      }
    } else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED && llmScheduledId !== undefined && Number.isNaN(llmStarted)) {
      if (Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === llmScheduledId) llmStarted = at(e);
    }
  }
  const historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  return { historyEvents: events.length, historyBytes, started, begun, llmScheduled, llmStarted };
}

/**
 * History events of a session's own workflows so far, found through visibility by its SessionId
 * search attribute (as an operator would), every run counted: none since sessions are chains of turns
 * (decision 0033) and the session workflows of decision 0016 are gone (decision 0041).
 */
export async function sessionHistoryEvents(client: Client, sessionId: string): Promise<{ events: number; runs: number }> {
  const query = `WorkflowType = 'sessionWorkflow' AND SessionId = '${sessionId}'`;
  let events = 0;
  let runs = 0;
  for await (const w of client.workflow.list({ query })) {
    runs += 1;
    events += (await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events?.length ?? 0;
  }
  return { events, runs };
}

/** Waits until the turn's workflow has closed, so the next message does not wait behind its last task and history counts are complete. */
export async function waitTurnClosed(client: Client, turnId: string): Promise<void> {
  await client.workflow.getHandle(turnId).result();
}
