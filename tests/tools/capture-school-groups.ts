/** History capture groups on the school servers (tests/helpers/school.ts); tests/tools/capture-histories.ts runs them. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DemoRules } from '../../src/demo-model/rules';
import { temporal } from '@temporalio/proto';
import { bearer, postJson, postMessage, readSse, waitFor } from '../helpers/http';
import { startSchoolSystem } from '../helpers/school';
import { EXAMPLE_RULES, ROOT } from '../helpers/system';
import { loadPolicyFile } from '../../src/config/policy';
import { save } from './history-capture';

/** The five seed patterns, and pattern 3 across a worker SIGKILL during process_payment. */
export async function captureSchool(): Promise<void> {
  const sys = await startSchoolSystem({ toolDelays: 'process_payment=1500' });
  try {
    const patterns: Array<[string, string]> = [
      ['turn-pattern1-simple-query', 'How many students do we have?'],
      ['turn-pattern2-single-tool', 'Add a teacher named Alice Johnson'],
      ['turn-pattern3-multi-server', "Process payment for student Bob's invoice"],
      ['turn-pattern4-fan-out', 'Give me a full system status report'],
      ['turn-pattern5-delegation', 'Assign homework Essay on Hamlet to English 101 due 2026-12-01'],
    ];
    const teacher = bearer(await sys.token('teacher'));
    for (const [name, text] of patterns) {
      const headers = name.includes('pattern5') ? teacher : {};
      const { body } = await postMessage(sys.apiUrl, 'replay', text, headers);
      await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000, headers });
      await save(sys, name, body.turnId);
    }
    // Bob's invoice is paid now: the crash run gets a fresh system (and store) of its own.
    await sys.stop();
    const crash = await startSchoolSystem({ toolDelays: 'process_payment=1500' });
    try {
      const { body } = await postMessage(crash.apiUrl, 'replay', "Process payment for student Bob's invoice");
      await readSse(`${crash.apiUrl}${body.eventsUrl as string}`, {
        stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment',
        timeoutMs: 60_000,
      });
      // Killed only once a worker holds the payment's attempt (the call is out, its answer not back).
      await waitFor(async () => {
        const pending = (await crash.client.workflow.getHandle(body.turnId).describe()).raw.pendingActivities ?? [];
        return pending.some((a) => a.activityType?.name === 'callTool' && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) || undefined;
      }, 60_000, 50);
      await crash.worker.kill();
      await crash.startWorker();
      await readSse(`${crash.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 120_000 });
      await save(crash, 'turn-pattern3-worker-crash', body.turnId);
    } finally {
      await crash.stop();
    }
  } finally {
    await sys.stop().catch(() => undefined);
  }
}

/** A durable approval (approved by the owner) and a policy denial of a hidden tool. */
export async function captureSecurity(): Promise<void> {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const sys = await startSchoolSystem({ policy: { ...policy, approval: { tools: ['admin/add_user'], timeoutMs: 60_000, approverRoles: ['admin'] } } });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', 'Add a teacher named Ada Approved');
    const seen = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { stopAfter: (e) => e.event === 'approval_required', timeoutMs: 60_000 });
    const id = seen.find((e) => e.event === 'approval_required')?.data.toolCallId as string;
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/approvals/${id}`, { approve: true });
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-approval-approved', body.turnId);

    const student = bearer(await sys.token('student'));
    const denied = await postMessage(sys.apiUrl, 'replay', 'Add an admin named Mallory Root', student);
    await readSse(`${sys.apiUrl}${denied.body.eventsUrl as string}`, { timeoutMs: 60_000, headers: student });
    await save(sys, 'turn-policy-denial', denied.body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A turn cancelled while process_payment was in flight. */
export async function captureCancel(): Promise<void> {
  const sys = await startSchoolSystem({ toolDelays: 'process_payment=5000' });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', "Process payment for student Bob's invoice");
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, {
      stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment',
      timeoutMs: 60_000,
    });
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/cancel`, {});
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-cancelled', body.turnId);
  } finally {
    await sys.stop();
  }
}

/**
 * One step with a slow read-only lookup (admin's find_user, held 1.5 s by the school servers' delay
 * hook) beside a write (comms' send_email): since 'read-only-beside-regular' both go out as activity
 * tasks in one workflow task completion and run side by side (decision 0021).
 */
export async function captureOverlap(): Promise<void> {
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const script = {
    name: 'look-up-and-mail',
    match: '(?i)^look up (\\w+) and tell the office',
    steps: [
      {
        toolCalls: [
          { name: 'admin__find_user', arguments: { query: '{{match.1}}', role: 'student' } },
          { name: 'comms__send_email', arguments: { to: 'office@school.example', subject: 'Looked up {{match.1}}', body: 'A lookup ran beside this mail.' } },
        ],
      },
      { text: 'Looked up {{match.1}} and told the office.' },
    ],
  };
  const sys = await startSchoolSystem({ toolDelays: 'find_user=1500', rules: { ...base, scripts: [script, ...(base.scripts ?? [])] } });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', 'look up Bob and tell the office');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-read-only-beside-regular', body.turnId);
  } finally {
    await sys.stop();
  }
}
