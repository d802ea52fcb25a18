import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
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
  expect(patchIds(recorded)).toContain('read-only-beside-regular');
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
