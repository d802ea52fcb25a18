import { ElicitationSession } from '../../src/mcp/elicitation';

const form = { mode: 'form' as const, message: 'Your name?', requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] } };
const page = { mode: 'url' as const, message: 'Open the payment page', url: 'https://pay.example/checkout', elicitationId: 'e-1' };

test('a question without a recorded answer is remembered and aborts the call', () => {
  const s = new ElicitationSession();
  expect(s.answer(form)).toEqual({ action: 'cancel' });
  expect(s.asked).toEqual({ message: 'Your name?', requestedSchema: form.requestedSchema });
  expect(s.signal.aborted).toBe(true);
});

test('a URL-mode request is asked as a page to open, with no form', () => {
  const s = new ElicitationSession();
  expect(s.answer(page)).toEqual({ action: 'cancel' });
  expect(s.asked).toEqual({ mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', requestedSchema: { type: 'object', properties: {} } });
});

test('recorded answers go back in order, matched by mode, message and URL (not by the server-chosen elicitation id)', () => {
  const s = new ElicitationSession([
    { mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', action: 'accept' },
    { message: 'Your name?', action: 'accept', content: { name: 'Ada' } },
  ]);
  expect(s.answer({ ...page, elicitationId: 'a-new-id' })).toEqual({ action: 'accept' });
  expect(s.answer(form)).toEqual({ action: 'accept', content: { name: 'Ada' } });
  expect(s.asked).toBeUndefined();
  expect(s.signal.aborted).toBe(false);
});

test('an answer for another page does not answer this one', () => {
  const s = new ElicitationSession([{ mode: 'url', message: 'Open the payment page', url: 'https://elsewhere.example/', action: 'accept' }]);
  expect(s.answer(page)).toEqual({ action: 'cancel' });
  expect(s.asked?.url).toBe('https://pay.example/checkout');
});

test('a declined form goes back without content', () => {
  const s = new ElicitationSession([{ message: 'Your name?', action: 'decline', content: { name: 'ignored' } }]);
  expect(s.answer(form)).toEqual({ action: 'decline' });
});
