import { ElicitationSession } from '../../src/mcp/elicitation';

const form = { mode: 'form' as const, message: 'Your name?', requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] } };
const page = { mode: 'url' as const, message: 'Open the payment page', url: 'https://pay.example/checkout', elicitationId: 'e-1' };

test('a question without a recorded answer is remembered and aborts the call', async () => {
  const s = new ElicitationSession();
  expect(await s.answer(form)).toEqual({ action: 'cancel' });
  expect(s.asked).toEqual({ message: 'Your name?', requestedSchema: form.requestedSchema });
  expect(s.signal.aborted).toBe(true);
});

test('a URL-mode request is asked as a page to open, with no form', async () => {
  const s = new ElicitationSession();
  expect(await s.answer(page)).toEqual({ action: 'cancel' });
  expect(s.asked).toEqual({ mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', requestedSchema: { type: 'object', properties: {} } });
});

test('recorded answers go back in order, matched by mode, message and URL (not by the server-chosen elicitation id)', async () => {
  const s = new ElicitationSession([
    { mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', action: 'accept' },
    { message: 'Your name?', action: 'accept', content: { name: 'Ada' } },
  ]);
  expect(await s.answer({ ...page, elicitationId: 'a-new-id' })).toEqual({ action: 'accept' });
  expect(await s.answer(form)).toEqual({ action: 'accept', content: { name: 'Ada' } });
  expect(s.asked).toBeUndefined();
  expect(s.signal.aborted).toBe(false);
});

test('an answer for another page does not answer this one', async () => {
  const s = new ElicitationSession([{ mode: 'url', message: 'Open the payment page', url: 'https://elsewhere.example/', action: 'accept' }]);
  expect(await s.answer(page)).toEqual({ action: 'cancel' });
  expect(s.asked?.url).toBe('https://pay.example/checkout');
});

test('a declined form goes back without content', async () => {
  const s = new ElicitationSession([{ message: 'Your name?', action: 'decline', content: { name: 'ignored' } }]);
  expect(await s.answer(form)).toEqual({ action: 'decline' });
});

test('held: the answer the user gives while the request is open goes back in the same call, nothing aborted', async () => {
  const asked: unknown[] = [];
  const s = new ElicitationSession([], async (question, matches) => {
    asked.push(question);
    const answer = { message: 'Your name?', action: 'accept' as const, content: { name: 'Grace' } };
    // An answer to another question (a stale one) is not taken for this one.
    expect(matches({ message: 'Something else?', action: 'accept' })).toBe(false);
    return matches(answer) ? answer : undefined;
  });
  expect(await s.answer(form)).toEqual({ action: 'accept', content: { name: 'Grace' } });
  expect(asked).toEqual([{ message: 'Your name?', requestedSchema: form.requestedSchema }]);
  expect(s.asked).toBeUndefined();
  expect(s.signal.aborted).toBe(false);
});

test('held, with no answer in time: the question is remembered and the call aborted (the re-issue takes over); a recorded answer is never held', async () => {
  let holds = 0;
  const hold = () => {
    holds++;
    return Promise.resolve(undefined);
  };
  const s = new ElicitationSession([], hold);
  expect(await s.answer(page)).toEqual({ action: 'cancel' });
  expect(s.asked?.mode).toBe('url');
  expect(s.signal.aborted).toBe(true);
  expect(holds).toBe(1);
  // Once the call is given up, a further question is not held again.
  expect(await s.answer(form)).toEqual({ action: 'cancel' });
  expect(holds).toBe(1);

  const recorded = new ElicitationSession([{ message: 'Your name?', action: 'accept', content: { name: 'Ada' } }], hold);
  expect(await recorded.answer(form)).toEqual({ action: 'accept', content: { name: 'Ada' } });
  expect(holds).toBe(1);
});

test("an accepted form gets the form's defaults for the fields its answer leaves out (both revisions: no SDK step does it for input_required)", async () => {
  const withDefaults = {
    mode: 'form' as const,
    message: 'Details?',
    requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const, default: 'John Doe' }, age: { type: 'integer' as const, default: 30 }, ok: { type: 'boolean' as const, default: true } } },
  };
  const s = new ElicitationSession([{ message: 'Details?', action: 'accept', content: { name: 'Ada', ok: false } }]);
  expect(await s.answer(withDefaults)).toEqual({ action: 'accept', content: { name: 'Ada', age: 30, ok: false } });
});
