import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { PREBUILT_BUNDLES, workflowBundleOptions } from './workflow-bundle';

/** Bundles the workflow code once at build time; workers load the result instead of running webpack. */
async function main(): Promise<void> {
  for (const [kind, file] of Object.entries(PREBUILT_BUNDLES)) {
    // Webpack's statistics are info lines (about 40 per bundle): only its warnings and errors are shown.
    const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(kind === 'traced'), logger: new DefaultLogger('WARN') });
    const out = path.resolve(__dirname, '..', file);
    writeFileSync(out, code);
    process.stdout.write(`workflow bundle (${kind}) written to ${path.relative(process.cwd(), out)}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bundle-workflows: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
