/**
 * Runs the demo model as a standalone process:
 *
 *   node dist/src/cli/demo-model.js --rules <file> [--port N] [--host H] [--api-key K] [--chunk-delay-ms MS]
 *
 * Stdout carries exactly one line, `DEMO_MODEL_URL=<url>`, once the server listens; start scripts
 * and tests parse it, so every log line goes to stderr. A bad rules file exits with code 2 and names
 * the offending field; other startup failures (port taken) exit with 1.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { ResolvedDemoRules } from '../demo-model/rules';
import { loadRulesFile, UsageError } from '../demo-model/rules-file';
import { startDemoModel } from '../demo-model/server';

function parseCli(argv: string[]): { rules: string; port: number; host: string; apiKey?: string; chunkDelayMs: number } {
  const { values } = parseArgs({
    args: argv,
    options: {
      rules: { type: 'string' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'api-key': { type: 'string' },
      'chunk-delay-ms': { type: 'string', default: '0' },
    },
    strict: true,
  });
  if (!values.rules) throw new UsageError('missing --rules <file>');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`invalid --port ${values.port}`);
  const chunkDelayMs = Number(values['chunk-delay-ms']);
  if (!Number.isInteger(chunkDelayMs) || chunkDelayMs < 0 || chunkDelayMs > 60_000) {
    throw new UsageError(`invalid --chunk-delay-ms ${values['chunk-delay-ms']}`);
  }
  return { rules: values.rules, port, host: values.host, apiKey: values['api-key'], chunkDelayMs };
}

async function main(): Promise<void> {
  const logger = pino({ name: 'demo-model' }, pino.destination(2));
  let args: ReturnType<typeof parseCli>;
  let rules: ResolvedDemoRules;
  try {
    args = parseCli(process.argv.slice(2));
    rules = loadRulesFile(args.rules);
  } catch (err) {
    process.stderr.write(`demo-model: ${err instanceof Error ? err.message : String(err)}\n`);
    process.stderr.write('usage: demo-model --rules <file> [--port N] [--host H] [--api-key K] [--chunk-delay-ms MS]\n');
    process.exit(2);
  }

  const handle = await startDemoModel({
    rules,
    host: args.host,
    port: args.port,
    apiKey: args.apiKey,
    chunkDelayMs: args.chunkDelayMs,
    logger,
  });
  process.stdout.write(`DEMO_MODEL_URL=${handle.url}\n`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second Ctrl-C means the user is done waiting.
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'demo model stopping');
    handle.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'demo model close failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`demo-model: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
