import { createSupervisorLog } from '../../src/cli/supervisor-log';

/** `npm start` on a terminal: each record one line, whatever it carries, so the banner stays in view. */
test('the pretty log prints one line per record, nested fields included', () => {
  const out: string[] = [];
  const log = createSupervisorLog({ format: 'pretty', isTty: false, write: (line) => void out.push(line) });
  log.info('MCP servers ready', { servers: { notes: { state: 'connected', tools: 3 }, school: { state: 'connected', tools: 12 } } });
  log.child('worker')(JSON.stringify({ level: 30, msg: 'worker started', taskQueue: 'q', options: { maxConcurrent: 100 } }));
  const text = out.join('');
  expect(text.split('\n').filter(Boolean)).toHaveLength(2);
  expect(text).toContain('MCP servers ready');
  expect(text).toContain('"tools":12');
});
