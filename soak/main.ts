import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../tests/helpers/system';
import { runSoak } from './run';

/**
 * `npm run soak [-- --users N --minutes T --out DIR --late-seconds S]` (or SOAK_USERS, SOAK_MINUTES,
 * SOAK_OUT, SOAK_LATE_SECONDS): builds, runs the soak, prints the report and exits 1 when a rule is
 * broken. Defaults: 50 users, 10 minutes, .data/soak/ (docs/soak/ holds the committed run), and turns
 * without an end at the drain deadline read again for as long as the drain lasted.
 */
const USAGE = 'usage: npm run soak -- [--users N] [--minutes T] [--out DIR] [--late-seconds S]';

// Ctrl-C or a kill: every process the run started is stopped before this one exits (the engines too).
let stopRun: (() => Promise<void>) | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`soak: ${signal}: stopping every process this run started\n`);
    void (stopRun?.() ?? Promise.resolve()).catch(() => undefined).then(() => process.exit(130));
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      users: { type: 'string', default: process.env.SOAK_USERS ?? '50' },
      minutes: { type: 'string', default: process.env.SOAK_MINUTES ?? '10' },
      out: { type: 'string', default: process.env.SOAK_OUT ?? path.join(ROOT, '.data/soak') },
      'late-seconds': { type: 'string', default: process.env.SOAK_LATE_SECONDS },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const users = Number(values.users);
  const minutes = Number(values.minutes);
  if (!Number.isInteger(users) || users < 1 || users > 1_000) throw new Error(`--users must be an integer from 1 to 1000 (${USAGE})`);
  if (!(minutes > 0 && minutes <= 24 * 60)) throw new Error(`--minutes must be a number of minutes above 0 (${USAGE})`);
  const lateRaw = values['late-seconds'];
  const late = lateRaw === undefined || lateRaw === '' ? undefined : Number(lateRaw);
  if (late !== undefined && !(Number.isFinite(late) && late >= 0 && late <= 24 * 3_600)) throw new Error(`--late-seconds must be a number of seconds from 0 to 86400 (${USAGE})`);
  const command = `npm run soak -- --users ${users} --minutes ${minutes}${late === undefined ? '' : ` --late-seconds ${late}`}`;
  const result = await runSoak({
    users, minutes, out: path.resolve(values.out), command,
    ...(late === undefined ? {} : { lateMs: late * 1000 }),
    onStop: (stop) => void (stopRun = stop),
  });
  process.stdout.write(result.report);
  process.stdout.write(`\nwritten to ${path.resolve(values.out)} (report.md, soak.svg, result.json)\n`);
  return result.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
