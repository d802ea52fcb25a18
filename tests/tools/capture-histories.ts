/**
 * Runs representative turns on real parts and writes their histories to tests/histories/, for the
 * replay suite. Run after a deliberate workflow change: `npm run build && TEMPORAL_CLI=... node
 * dist/tests/tools/capture-histories.js`. Existing files with the same names are replaced.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { DemoRules } from '../../src/demo-model/rules';
import { postMessage, readSse } from '../helpers/http';
import { EXAMPLE_RULES, ROOT, startSystem } from '../helpers/system';

const OUT = path.join(ROOT, 'tests', 'histories');

async function main(): Promise<void> {
  const example = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const rules: DemoRules = {
    ...example,
    scripts: [
      { name: 'ghost', match: '(?i)^call the ghost tool', steps: [{ toolCalls: [{ name: 'ghost__vanish', arguments: {} }] }, { text: 'ghost: {{result.0}}' }] },
      ...(example.scripts ?? []),
    ],
  };
  const sys = await startSystem({ rules });
  try {
    mkdirSync(OUT, { recursive: true });
    const scenarios: Array<{ name: string; text: string; before?: () => void }> = [
      { name: 'turn-two-servers', text: 'remember that replay keeps us honest' },
      { name: 'turn-text-only', text: 'hello' },
      { name: 'turn-unknown-tool', text: 'call the ghost tool' },
      { name: 'turn-llm-rejected', text: 'hello', before: () => sys.model.setFaults([{ status: 401, times: 1 }]) },
      { name: 'turn-llm-retried', text: 'add 2 and 3', before: () => sys.model.setFaults([{ status: 503, times: 1 }]) },
    ];
    for (const s of scenarios) {
      s.before?.();
      const { body } = await postMessage(sys.apiUrl, 'replay', s.text);
      await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
      const history = await sys.client.workflow.getHandle(body.turnId).fetchHistory();
      const file = path.join(OUT, `${s.name}.json`);
      writeFileSync(file, `${JSON.stringify({ workflowId: body.turnId, history: JSON.parse(historyToJSON(history)) }, null, 1)}\n`);
      process.stdout.write(`wrote ${path.relative(ROOT, file)} (${history.events?.length ?? 0} events)\n`);
    }
    const catalogRun = await sys.client.workflow.execute('catalogWorkflow', { workflowId: 'catalog-capture', taskQueue: sys.taskQueue });
    void catalogRun;
    const catalogHistory = await sys.client.workflow.getHandle('catalog-capture').fetchHistory();
    writeFileSync(
      path.join(OUT, 'catalog.json'),
      `${JSON.stringify({ workflowId: 'catalog-capture', history: JSON.parse(historyToJSON(catalogHistory)) }, null, 1)}\n`,
    );
    process.stdout.write('wrote tests/histories/catalog.json\n');
  } finally {
    await sys.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`capture-histories: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
