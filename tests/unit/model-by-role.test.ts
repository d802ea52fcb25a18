/** The host config's `modelByRole` (docs/decisions/0042): validated against `models`, and the choice per role. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadHostConfig, turnSettingsFrom } from '../../src/config';
import { HostConfigSchema } from '../../src/config/host-schema';
import { modelForRole } from '../../src/config/models';

const models = {
  claude: { provider: 'anthropic', model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' },
  local: { provider: 'openai', model: 'llama3', baseUrl: 'http://127.0.0.1:11434/v1' },
};

test('modelByRole names models of `models`; an unknown name is refused, naming the role and the configured models', () => {
  const host = HostConfigSchema.parse({ models, modelByRole: { teacher: 'claude', student: 'local' } });
  expect(host.modelByRole).toEqual({ teacher: 'claude', student: 'local' });
  expect(HostConfigSchema.parse({}).modelByRole).toEqual({});

  const unknown = HostConfigSchema.safeParse({ models, modelByRole: { teacher: 'gpt-5' } });
  expect(unknown.success).toBe(false);
  expect(unknown.error?.issues).toEqual([
    expect.objectContaining({ path: ['modelByRole', 'teacher'], message: 'names no model in models ("gpt-5"; configured: claude, local)' }),
  ]);
  const none = HostConfigSchema.safeParse({ modelByRole: { teacher: 'claude' } });
  expect(none.error?.issues[0]?.message).toBe('names no model in models ("claude"; none configured)');
  // Not a name at all.
  expect(HostConfigSchema.safeParse({ models, modelByRole: { teacher: '' } }).success).toBe(false);
  expect(HostConfigSchema.safeParse({ models, modelByRole: { teacher: 3 } }).success).toBe(false);
});

test("a role's model goes into the turn settings; a role without one gets none (the worker's default)", () => {
  const host = HostConfigSchema.parse({ models, modelByRole: { teacher: 'claude' } });
  const settings = turnSettingsFrom(host, { roles: {}, toolScopes: {} });
  expect(settings.modelByRole).toEqual({ teacher: 'claude' });
  expect(settings.turnOptions).not.toHaveProperty('model');
  expect(modelForRole('teacher', settings.modelByRole)).toEqual({ model: 'claude' });
  expect(modelForRole('student', settings.modelByRole)).toEqual({});
  // Inherited names are no roles of the config.
  expect(modelForRole('constructor', settings.modelByRole)).toEqual({});
  expect(modelForRole('teacher', undefined)).toEqual({});
});

test('a host config file naming an unknown model for a role does not load; the error names the file, the field and the names', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-model-by-role-'));
  try {
    const file = path.join(dir, 'host.json');
    writeFileSync(file, JSON.stringify({ models, modelByRole: { teacher: 'claude', student: 'gpt-5' } }));
    expect(() => loadHostConfig(file)).toThrow(/host\.json.*modelByRole\.student.*names no model in models \("gpt-5"; configured: claude, local\)/s);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
