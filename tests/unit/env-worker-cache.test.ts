/** WORKER_MAX_CACHED_WORKFLOWS: the worker's sticky cache, and the workflow task slots that follow it. */
import { randomBytes } from 'node:crypto';
import { loadEnvConfig, workflowCacheOptions } from '../../src/config';

const base = { JWT_SECRET: randomBytes(32).toString('hex') };

test("unset leaves the SDK's defaults; a number is taken; 1, a fraction or a negative number is refused with the variable's name", () => {
  expect(loadEnvConfig(base).WORKER_MAX_CACHED_WORKFLOWS).toBeUndefined();
  expect(loadEnvConfig({ ...base, WORKER_MAX_CACHED_WORKFLOWS: '32' }).WORKER_MAX_CACHED_WORKFLOWS).toBe(32);
  expect(loadEnvConfig({ ...base, WORKER_MAX_CACHED_WORKFLOWS: '0' }).WORKER_MAX_CACHED_WORKFLOWS).toBe(0);
  for (const bad of ['1', '2.5', '-3', 'lots']) {
    expect(() => loadEnvConfig({ ...base, WORKER_MAX_CACHED_WORKFLOWS: bad })).toThrow(/WORKER_MAX_CACHED_WORKFLOWS/);
  }
});

test('a cache smaller than the 40 workflow task slots brings the slots down to it; 0 or a larger cache leaves them', () => {
  expect(workflowCacheOptions(undefined)).toEqual({});
  expect(workflowCacheOptions(0)).toEqual({ maxCachedWorkflows: 0 });
  expect(workflowCacheOptions(32)).toEqual({ maxCachedWorkflows: 32, maxConcurrentWorkflowTaskExecutions: 32 });
  expect(workflowCacheOptions(40)).toEqual({ maxCachedWorkflows: 40 });
  expect(workflowCacheOptions(500)).toEqual({ maxCachedWorkflows: 500 });
});
