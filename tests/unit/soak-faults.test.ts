import { schedule } from '../../soak/faults';

test("the soak's kills spare worker-3 and api-2, so each kind has an instance that lives through the run", async () => {
  const faults = schedule(600_000);
  const names = faults.map((f) => f.name);
  // A worker every 2 minutes, a replica every 3, in a 10-minute run; each engine fault once.
  expect(names.filter((n) => n.startsWith('kill worker-'))).toEqual(['kill worker-1', 'kill worker-2', 'kill worker-1', 'kill worker-2']);
  expect(names.filter((n) => n.startsWith('kill api-'))).toEqual(['kill api-1', 'kill api-1', 'kill api-1']);
  for (const once of ['kill payments', 'restart bus PostgreSQL', 'restart Temporal']) expect(names.filter((n) => n === once)).toHaveLength(1);
  expect(faults.map((f) => f.atMs)).toEqual([...faults.map((f) => f.atMs)].sort((a, b) => a - b));

  // What each fault does to the topology: the spared instances are never asked to die.
  const killed = { workers: new Set<number>(), apis: new Set<number>() };
  const topology = {
    killWorker: async (i: number) => void killed.workers.add(i),
    killApi: async (i: number) => void killed.apis.add(i),
    restartPayments: async () => undefined,
    restartBus: async () => undefined,
    restartTemporal: async () => undefined,
  };
  for (const f of faults) await f.run(topology as never);
  expect([...killed.workers].sort()).toEqual([0, 1]);
  expect([...killed.apis]).toEqual([0]);
});
