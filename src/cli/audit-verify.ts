/**
 * Verifies a hash-chained audit log written by src/audit/log.ts:
 *
 *   node dist/src/cli/audit-verify.js <file>
 *
 * Exit 0 and `OK: N entries, head <hash>` when the chain is intact (record the head hash elsewhere:
 * it is what makes a later truncation or tail rewrite detectable); exit 1 and
 * `BROKEN at line L (seq S): <reason>` at the first break; exit 2 for usage errors or a file that
 * cannot be read, since no verdict was reached.
 */
import { verifyAuditLog } from '../audit/verify';

const USAGE = 'usage: audit-verify <audit-log.jsonl>';

export async function runAuditVerify(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) {
    out(USAGE);
    return 0;
  }
  const file = argv[0];
  if (argv.length !== 1 || file === undefined || file === '' || file.startsWith('-')) {
    // A leading dash is taken for a mistyped option; a file with such a name can be given as ./-name.
    err(
      file?.startsWith('-') && argv.length === 1
        ? `audit-verify: unknown option ${file}`
        : `audit-verify: expected exactly one file argument, got ${argv.length}`,
    );
    err(USAGE);
    return 2;
  }
  let result: Awaited<ReturnType<typeof verifyAuditLog>>;
  try {
    result = await verifyAuditLog(file);
  } catch (e) {
    err(`audit-verify: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  if (result.ok) {
    out(`OK: ${result.entries} entries, head ${result.headHash}${result.missing ? ` (${file} does not exist)` : ''}`);
    return 0;
  }
  const { line, seq, reason } = result.firstBad;
  out(`BROKEN at line ${line}${seq === undefined ? '' : ` (seq ${seq})`}: ${reason}`);
  return 1;
}

if (require.main === module) {
  runAuditVerify(
    process.argv.slice(2),
    (line) => process.stdout.write(`${line}\n`),
    (line) => process.stderr.write(`${line}\n`),
  ).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`audit-verify: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 2;
    },
  );
}
