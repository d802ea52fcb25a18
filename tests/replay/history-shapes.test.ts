import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { LlmRequest, LlmResponse, TurnInput } from '../../src/shared/turn';
import { patchIds, spanOf, toolSpans } from '../helpers/tool-spans';

/**
 * What committed histories show about how a turn ran on real parts (worker process, MCP servers,
 * dev server), beyond replaying: here, that the calls of one step overlap (decision 0021).
 */
function history(name: string) {
  const json = JSON.parse(readFileSync(path.resolve(__dirname, '..', 'histories', `${name}.json`), 'utf8')) as { history: unknown };
  return historyFromJSON(json.history);
}

test('a slow read-only lookup beside a write: both went out in one workflow task completion, and the write was done while the lookup ran', () => {
  const recorded = history('turn-read-only-beside-regular');
  const spans = toolSpans(recorded);
  const lookup = spanOf(spans, 'admin: find_user');
  const mail = spanOf(spans, 'comms: send_email');
  expect([lookup.kind, mail.kind]).toEqual(['activity', 'activity']);
  expect(lookup.workflowTaskCompletedEventId).toBe(mail.workflowTaskCompletedEventId);
  // The school servers' delay hook held the lookup 1.5 s.
  expect(lookup.finishedMs - lookup.startedMs).toBeGreaterThanOrEqual(1_500);
  expect(mail.startedMs).toBeLessThan(lookup.finishedMs);
  expect(mail.finishedMs).toBeLessThan(lookup.finishedMs);
  // The choice is no longer behind a patch (folded, decision 0017): no marker, no search attribute upsert.
  expect(patchIds(recorded)).not.toContain('read-only-beside-regular');
  expect((recorded.events ?? []).filter((e) => e.upsertWorkflowSearchAttributesEventAttributes)).toEqual([]);
});

test('before the patch, a read-only call beside a write ran as a local activity and the write went out after it', () => {
  // Recorded before 'read-only-beside-regular' (notes' add_note beside everything's echo); retired
  // from the replay set with the 'catalog-by-reference' marker it carries (decision 0017), kept for this.
  const spans = toolSpans(history('retired/turn-read-only-local'));
  const echo = spanOf(spans, 'everything: echo');
  const note = spanOf(spans, 'notes: add_note');
  expect(echo.kind).toBe('local');
  expect(note.scheduledMs).toBeGreaterThanOrEqual(echo.finishedMs);
});

test("a turn of a role with its own model (decision 0042): every LLM step asked it, and the history records who answered", () => {
  const events = history('turn-model-by-role').events ?? [];
  const first = <T>(payloads: { payloads?: unknown[] | null } | null | undefined): T =>
    defaultPayloadConverter.fromPayload((payloads?.payloads ?? [])[0] as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  const llm = new Set<string>();
  const asked: Array<[number, string | undefined]> = [];
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'callLlm') continue;
    llm.add(String(e.eventId));
    const req = first<LlmRequest>(a.input);
    asked.push([req.step, req.model]);
  }
  const answered = events.flatMap((e) => {
    const c = e.activityTaskCompletedEventAttributes;
    if (!c || !llm.has(String(c.scheduledEventId))) return [];
    const res = first<LlmResponse>(c.result);
    return [[res.provider, res.model]];
  });
  expect(asked).toEqual([
    [1, 'claude'],
    [2, 'claude'],
  ]);
  expect(answered).toEqual([
    ['anthropic', 'demo-model'],
    ['anthropic', 'demo-model'],
  ]);
});

test("a new session's first turn, told so by the API: no read of the turns before, and the model got only the message", () => {
  const events = history('turn-chain-first').events ?? [];
  const first = <T>(payloads: { payloads?: unknown[] | null } | null | undefined): T =>
    defaultPayloadConverter.fromPayload((payloads?.payloads ?? [])[0] as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  const input = first<TurnInput>(events[0]?.workflowExecutionStartedEventAttributes?.input);
  expect(input.chain).toMatchObject({ after: [], first: true });
  expect(input.chain?.legacySession).toBeUndefined();
  // One local activity in the whole turn: the catalog's, none for the memory.
  expect(events.filter((e) => e.markerRecordedEventAttributes)).toHaveLength(1);
  const llm = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callLlm');
  const request = first<LlmRequest>(llm?.activityTaskScheduledEventAttributes?.input);
  expect(request.messages.filter((m) => m.role !== 'system')).toEqual([{ role: 'user', content: input.userText }]);
});

test('a turn started with the memory the turn before handed on (decision 0033): no read of the turns before, and the model got that memory', () => {
  const events = history('turn-chain-handed-on').events ?? [];
  const first = <T>(payloads: { payloads?: unknown[] | null } | null | undefined): T =>
    defaultPayloadConverter.fromPayload((payloads?.payloads ?? [])[0] as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  const input = first<TurnInput>(events[0]?.workflowExecutionStartedEventAttributes?.input);
  expect(input.chain?.handedOn?.turnId).toBe(input.chain?.after[0]);
  // One local activity in the whole turn: the catalog's, none for the memory.
  expect(events.filter((e) => e.markerRecordedEventAttributes)).toHaveLength(1);
  const llm = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callLlm');
  const request = first<LlmRequest>(llm?.activityTaskScheduledEventAttributes?.input);
  expect(request.messages.filter((m) => m.role !== 'system')).toEqual([...(input.chain?.handedOn?.memory.messages ?? []), { role: 'user', content: input.userText }]);
});
