import { createLogger, temporalLogger } from '../../src/logger';

/**
 * Issue 27 §4: the Temporal SDK's lines that report an outcome the host asked for (an activity of a
 * cancelled turn completing after it was gone) or its routine lifecycle come out at debug; its other
 * warnings and errors keep their level.
 */
function sdkLines() {
  const lines: Array<{ level: number; msg: string; component?: string; [key: string]: unknown }> = [];
  const logger = createLogger('worker', 'debug', { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { sdk: temporalLogger(logger), lines };
}

test('expected outcomes and routine lifecycle lines at debug, everything else at its own level', () => {
  const { sdk, lines } = sdkLines();
  sdk.warn('Activity not found on completion. This may happen if the activity has already been cancelled', { taskQueue: 'q' });
  sdk.info('Worker state changed', { state: 'RUNNING' });
  sdk.info('No Nexus services registered, not polling for Nexus tasks');
  sdk.warn('Activity failed', { activityType: 'callTool' });
  sdk.info('Workflow bundle loaded');
  sdk.error('Worker failed');
  // An expected line is only demoted from the level it is expected at.
  sdk.error('Activity not found on completion');
  expect(lines.map((l) => [l.level, l.msg.split(/[.,]/)[0]])).toEqual([
    [20, 'Activity not found on completion'],
    [20, 'Worker state changed'],
    [20, 'No Nexus services registered'],
    [40, 'Activity failed'],
    [30, 'Workflow bundle loaded'],
    [50, 'Worker failed'],
    [50, 'Activity not found on completion'],
  ]);
  expect(lines.every((l) => l.component === 'temporal')).toBe(true);
  expect(lines[0]).toMatchObject({ taskQueue: 'q' });
});
