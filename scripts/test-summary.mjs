// Prints the one line CI reads, `N passed, N failed`, from jest's --json results. A suite that could
// not run at all (a syntax error, a failing beforeAll) has no failed test of its own: it counts as one
// failure, so it can never pass unnoticed. Exits non-zero when the results are missing or show failures.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
let results;
try {
  results = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  process.stderr.write(`test-summary: no jest results in ${file}: ${err.message}\n`);
  process.stdout.write('0 passed, 1 failed\n');
  process.exit(1);
}
const suites = Array.isArray(results.testResults) ? results.testResults : [];
const brokenSuites = suites.filter(
  (s) => s.status === 'failed' && (s.assertionResults ?? []).every((a) => a.status !== 'failed'),
).length;
const passed = results.numPassedTests ?? 0;
const failed = (results.numFailedTests ?? 0) + brokenSuites;
const skipped = (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
process.stdout.write(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}\n`);
process.exit(failed > 0 || results.success === false ? 1 : 0);
