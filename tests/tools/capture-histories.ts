/**
 * Runs representative turns on real parts and writes their histories to tests/histories/, for the
 * replay suite. Run after a deliberate workflow change: `npm run build && TEMPORAL_CLI=... node
 * dist/tests/tools/capture-histories.js`. Existing files with the same names are replaced.
 * The groups live in capture-school-groups.ts and capture-demo-groups.ts, their machinery in history-capture.ts.
 */
import {
  captureAdaptiveContext,
  captureBasic,
  captureContextIntent,
  captureDirect,
  captureElicitation,
  captureModelByRole,
  captureOAuth,
  captureReadOnly,
  captureRefs,
  captureSampling,
  captureSamplingApproval,
  captureSealed,
  captureSession,
  captureSessionMemory,
  captureToolSearch,
  captureTraced,
  captureUrlElicitation,
} from './capture-demo-groups';
import { captureCancel, captureOverlap, captureSchool, captureSecurity } from './capture-school-groups';

/** Every group by the name the command line gives it, in the order they run. */
const GROUPS: ReadonlyArray<[string, () => Promise<void>]> = [
  ['basic', captureBasic],
  ['school', captureSchool],
  ['security', captureSecurity],
  ['cancel', captureCancel],
  ['session', captureSession],
  ['session-memory', captureSessionMemory],
  ['direct', captureDirect],
  ['refs', captureRefs],
  ['read-only', captureReadOnly],
  ['oauth', captureOAuth],
  ['elicitation', captureElicitation],
  ['sampling', captureSampling],
  ['url-elicitation', captureUrlElicitation],
  ['sampling-approval', captureSamplingApproval],
  ['traced', captureTraced],
  ['overlap', captureOverlap],
  ['sealed', captureSealed],
  ['tool-search', captureToolSearch],
  ['context-intent', captureContextIntent],
  ['adaptive-context', captureAdaptiveContext],
  ['model-by-role', captureModelByRole],
];

/** `node capture-histories.js [group ...]` (the names of GROUPS): the groups to capture (default all). */
async function all(): Promise<void> {
  const groups = process.argv.slice(2);
  for (const [name, capture] of GROUPS) if (groups.length === 0 || groups.includes(name)) await capture();
}

all().catch((err: unknown) => {
  process.stderr.write(`capture-histories: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
