/**
 * A model per caller role, on real processes (docs/decisions/0042): the host config's `modelByRole`
 * sends a teacher's turns to a named model of another provider (Anthropic's adapter, against the demo
 * model's stand-in for it) while the admin's go to the default (OpenAI-compatible); the turn's events
 * name who answered, and GET /v1/admin/usage shows each provider's row, priced by its own price.
 */
import type { z } from 'zod';
import type { UsageReport } from '../../src/api/contract';
import { bearer, getJson, postMessage, readSse, waitFor } from '../helpers/http';
import { providerCase } from '../helpers/providers';
import { startSystem, type TestSystem } from '../helpers/system';

let sys: TestSystem;
beforeAll(async () => {
  sys = await startSystem({
    host: {
      modelByRole: { teacher: 'claude' },
      prices: {
        'demo-model': { promptPerMillion: 1, completionPerMillion: 1, currency: 'USD' },
        'anthropic:demo-model': { promptPerMillion: 3, completionPerMillion: 15, currency: 'USD' },
      },
    },
    hostFor: (model) => ({ models: { claude: { provider: 'anthropic', model: 'demo-model', baseUrl: providerCase('anthropic').baseUrl(model) } } }),
  });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

type UsageRow = z.output<typeof UsageReport>['rows'][number];

async function ask(who: 'admin' | 'teacher', sessionId: string) {
  const auth = bearer(await sys.token(who));
  const post = await postMessage(sys.apiUrl, sessionId, 'hello', auth);
  expect(post.status).toBe(202);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { headers: auth, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  return events.find((e) => e.event === 'text')?.data;
}

test("the role's model answers its turns, the events say which, and usage is per provider and model with each one's price", async () => {
  const before = sys.model.requests().length;
  expect(await ask('teacher', 'role-model')).toMatchObject({ provider: 'anthropic', model: 'demo-model' });
  expect(sys.model.requests().slice(before).map((r) => r.path)).toEqual(['/v1/messages']);
  expect(await ask('admin', 'default-model')).toMatchObject({ provider: 'openai', model: 'demo-model' });

  const admin = bearer(await sys.token('admin'));
  const rows = await waitFor(async () => {
    const r = await getJson(`${sys.apiUrl}/v1/admin/usage?groupBy=user`, admin);
    const found = r.status === 200 ? (r.body.rows as UsageRow[]) : [];
    return found.some((x) => x.userId === 'u-tom') && found.some((x) => x.userId === 'u-ada') ? found : undefined;
  }, 60_000, 200);
  const teacher = rows.find((r) => r.userId === 'u-tom') as UsageRow;
  const own = rows.find((r) => r.userId === 'u-ada') as UsageRow;
  expect(teacher).toMatchObject({ provider: 'anthropic', model: 'demo-model', turns: 1 });
  expect(own).toMatchObject({ provider: 'openai', model: 'demo-model', turns: 1 });
  expect(teacher.cost?.amount).toBeCloseTo((teacher.promptTokens * 3 + (teacher.completionTokens + teacher.samplingTokens) * 15) / 1_000_000, 6);
  expect(own.cost?.amount).toBeCloseTo((own.promptTokens + own.completionTokens + own.samplingTokens) / 1_000_000, 6);
}, 120_000);
