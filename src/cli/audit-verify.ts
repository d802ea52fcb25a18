/**
 * Verifies a hash-chained audit log written by src/audit/log.ts, in a file or in PostgreSQL:
 *
 *   node dist/src/cli/audit-verify.js <file>
 *   node dist/src/cli/audit-verify.js postgres://user:password@host:5432/db
 *
 * Exit 0 and `OK: N entries, head <hash>` when the chain is intact (record the head hash elsewhere:
 * it is what makes a later truncation or tail rewrite detectable); exit 1 and
 * `BROKEN at line L (seq S): <reason>` at the first break; exit 2 for usage errors or a file that
 * cannot be read, since no verdict was reached.
 */
import { Pool } from 'pg';
import { verifyAuditTable } from '../audit/pg-store';
import { verifyAuditLog } from '../audit/verify';

const USAGE = 'usage: audit-verify <audit-log.jsonl | postgres://...>';
const POSTGRES = /^postgres(ql)?:\/\//;

async function verifyTable(url: string): Promise<Awaited<ReturnType<typeof verifyAuditTable>>> {
  const pool = new Pool({ connectionString: url, max: 1 });
  pool.on('error', () => undefined);
  try {
    return await verifyAuditTable(pool);
  } finally {
    await pool.end();
  }
}

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
    result = POSTGRES.test(file) ? await verifyTable(file) : await verifyAuditLog(file);
  } catch (e) {
    // A connection string is never echoed: it may hold a password.
    const what = POSTGRES.test(file) ? 'the PostgreSQL audit table' : file;
    err(`audit-verify: cannot read ${what}: ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  if (result.ok) {
    const missing = POSTGRES.test(file) ? 'the table dmh_audit does not exist' : `${file} does not exist`;
    out(`OK: ${result.entries} entries, head ${result.headHash}${result.missing ? ` (${missing})` : ''}`);
    return 0;
  }
  const { line, seq, reason } = result.firstBad;
  out(`BROKEN at ${POSTGRES.test(file) ? 'row' : 'line'} ${line}${seq === undefined ? '' : ` (seq ${seq})`}: ${reason}`);
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
