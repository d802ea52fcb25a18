#!/usr/bin/env node
/**
 * Runs a command while a bounded CPU hog keeps the machine's cores busy, so tests that depend on
 * timing show it (docs/RELIABILITY.md, "Tests under a CPU hog"):
 *
 *   node scripts/cpu-hog.mjs [--threads N] [--duty 0.9] [--max-seconds 3600] -- <command> [args...]
 *   node scripts/cpu-hog.mjs -- npx jest tests/unit/worker-reports.test.ts
 *   TEST_CPU_HOG=1 npm test                      (the whole suite under it: scripts/test.sh)
 *
 * Bounded: `--threads` busy threads (default: one per core), each busy `--duty` of every 100 ms
 * (default 0.9, at most 1), never longer than `--max-seconds` (default 3600), and stopped the moment
 * the command exits. Exits with the command's status; SIGINT and SIGTERM go to the command.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

const SLICE_MS = 100;

function usage(message) {
  process.stderr.write(`cpu-hog: ${message}\nusage: node scripts/cpu-hog.mjs [--threads N] [--duty 0..1] [--max-seconds S] -- <command> [args...]\n`);
  process.exit(2);
}

function parse(argv) {
  const opts = { threads: availableParallelism(), duty: 0.9, maxSeconds: 3600 };
  const split = argv.indexOf('--');
  if (split < 0 || split === argv.length - 1) usage('no command given (after --)');
  const flags = argv.slice(0, split);
  for (let i = 0; i < flags.length; i += 2) {
    const [name, raw] = [flags[i], flags[i + 1]];
    const value = Number(raw);
    if (raw === undefined || !Number.isFinite(value)) usage(`${name} needs a number`);
    if (name === '--threads' && Number.isInteger(value) && value >= 1 && value <= 256) opts.threads = value;
    else if (name === '--duty' && value > 0 && value <= 1) opts.duty = value;
    else if (name === '--max-seconds' && value > 0) opts.maxSeconds = value;
    else usage(`bad option ${name} ${raw}`);
  }
  return { ...opts, command: argv[split + 1], args: argv.slice(split + 2) };
}

// Each thread: busy for duty × slice, idle for the rest, until told to stop (a shared flag).
const HOG = `
const { workerData } = require('node:worker_threads');
const { stop, busyMs, idleMs, until } = workerData;
const flag = new Int32Array(stop);
let x = 0;
while (Atomics.load(flag, 0) === 0 && Date.now() < until) {
  const end = Date.now() + busyMs;
  while (Date.now() < end) x = (x * 1103515245 + 12345) % 2147483648;
  if (idleMs > 0) Atomics.wait(flag, 0, 0, idleMs);
}
`;

const opts = parse(process.argv.slice(2));
const stop = new SharedArrayBuffer(4);
const flag = new Int32Array(stop);
const workerData = { stop, busyMs: Math.round(SLICE_MS * opts.duty), idleMs: SLICE_MS - Math.round(SLICE_MS * opts.duty), until: Date.now() + opts.maxSeconds * 1000 };
const hogs = Array.from({ length: opts.threads }, () => new Worker(HOG, { eval: true, workerData }));
process.stderr.write(`cpu-hog: ${opts.threads} thread(s) busy ${Math.round(opts.duty * 100)}% for at most ${opts.maxSeconds} s while: ${[opts.command, ...opts.args].join(' ')}\n`);

const stopHogs = async () => {
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  await Promise.all(hogs.map((h) => h.terminate()));
};

const child = spawn(opts.command, opts.args, { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('error', async (err) => {
  await stopHogs();
  process.stderr.write(`cpu-hog: could not run ${opts.command}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', async (code, signal) => {
  await stopHogs();
  process.exit(code ?? (signal ? 128 : 1));
});
