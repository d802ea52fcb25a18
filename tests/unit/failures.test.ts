import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { createTemporalGateway } from '../../src/api/gateway';
import { Failure, failureTypeOf, type FailureType } from '../../src/shared/failures';
import type { SessionSettings } from '../../src/shared/session';
import type { TurnOptions } from '../../src/shared/turn';

const user = { id: 'ada', role: 'teacher', tenant: 'demo', scopes: [] };

/** A gateway whose every update is refused by the workflow with `type`, worded as nothing we ever wrote. */
function refusingGateway(type: string) {
  const refuse = async () => {
    throw new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ type, message: `reworded ${Math.random()}` }));
  };
  const client = {
    workflow: { getHandle: () => ({ executeUpdate: refuse }), executeUpdateWithStart: refuse },
  } as unknown as Client;
  return createTemporalGateway({
    client,
    taskQueue: 'q',
    settings: () => ({ policy: { roles: {}, toolScopes: {} }, turnOptions: {} as TurnOptions, contextByRole: {}, sessionSettings: {} as SessionSettings }),
    catalogCacheMs: 0,
  });
}

describe('the gateway decides on failure types, never on wording', () => {
  it.each([
    [Failure.ApprovalAlreadyDecided, 'already_decided'],
    [Failure.ApprovalForbidden, 'forbidden'],
    [Failure.ApprovalNotPending, 'not_pending'],
  ])('an approval refused with %s is %s', async (type, kind) => {
    await expect(refusingGateway(type).decideApproval('turn-s-1', { toolCallId: 'c1', approve: true, approver: user })).resolves.toEqual({ kind });
  });

  it('a refusal of an unknown type is not mistaken for a known one', async () => {
    await expect(refusingGateway('SomethingElse').decideApproval('turn-s-1', { toolCallId: 'c1', approve: true, approver: user })).rejects.toBeInstanceOf(
      WorkflowUpdateFailedError,
    );
  });
});

describe('failureTypeOf', () => {
  it('finds the type through activity failure causes', () => {
    const inner = ApplicationFailure.nonRetryable('HTTP 401', Failure.LlmRequestRejected);
    const outer = new ActivityFailure('activity failed', 'callLlm', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker', inner);
    expect(failureTypeOf(outer)).toBe(Failure.LlmRequestRejected);
  });

  it('ignores types outside the vocabulary', () => {
    expect(failureTypeOf(ApplicationFailure.create({ type: 'Error', message: 'x' }))).toBeUndefined();
    expect(failureTypeOf(new Error('x'))).toBeUndefined();
    expect(failureTypeOf(undefined)).toBeUndefined();
  });

  it('has one distinct value per name', () => {
    const entries = Object.entries(Failure) as Array<[string, FailureType]>;
    for (const [name, value] of entries) expect(value).toBe(name);
  });
});

describe('failure types are written once', () => {
  const root = path.resolve(__dirname, '../../src');
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(path.join(dir, d.name)) : d.name.endsWith('.ts') ? [path.join(dir, d.name)] : []));

  it('no source file but src/shared/failures.ts spells a failure type as a string literal', () => {
    const offenders: string[] = [];
    for (const file of files(root)) {
      if (file.endsWith(path.join('shared', 'failures.ts'))) continue;
      const text = readFileSync(file, 'utf8');
      for (const type of Object.values(Failure)) {
        if (text.includes(`'${type}'`) || text.includes(`"${type}"`)) offenders.push(`${path.relative(root, file)}: ${type}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
