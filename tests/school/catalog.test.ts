/**
 * What each school server offers (tools with their annotations, resources, prompts), read over the
 * protocol from the real processes: the table the README documents.
 */
import { createArgumentValidator } from '../../src/validation/json-schema';
import { buildSchoolServers, connectStdio, readJsonResource, SERVER_NAMES, tempDir, type Connected, type SchoolServerName } from './helpers';

jest.setTimeout(60_000);

type Hints = [readOnly: boolean, destructive: boolean, idempotent: boolean];

const EXPECTED: Record<SchoolServerName, { tools: Record<string, Hints>; resources: string[]; prompts: string[] }> = {
  admin: {
    tools: {
      add_user: [false, false, false],
      create_class: [false, false, false],
      enrol_student: [false, false, true],
      find_user: [true, false, true],
      get_invoice: [true, false, true],
      issue_invoice: [false, false, false],
      record_payment: [false, false, true],
    },
    resources: ['admin://classes', 'admin://invoices', 'admin://system_status', 'admin://users'],
    prompts: ['admin_persona'],
  },
  payments: {
    tools: { process_payment: [false, true, false], refund_payment: [false, true, true] },
    resources: ['payments://revenue_summary', 'payments://transactions'],
    prompts: [],
  },
  comms: {
    tools: { send_bulk: [false, false, false], send_email: [false, false, false] },
    resources: ['comms://outbox'],
    prompts: [],
  },
  student: {
    tools: { ask_tutor: [true, false, true], submit_homework: [false, false, false], view_grades: [true, false, true] },
    resources: ['student://homework', 'student://profile', 'student://progress', 'student://schedule'],
    prompts: ['student_persona'],
  },
  teacher: {
    tools: { assign_homework: [false, false, false], list_students: [true, false, true], mark_attendance: [false, true, true] },
    resources: ['teacher://my_classes', 'teacher://my_timetable'],
    prompts: [],
  },
};

const tmp = tempDir();
const servers = new Map<SchoolServerName, Connected>();

beforeAll(async () => {
  const scripts = await buildSchoolServers();
  const file = tmp.file();
  // One at a time: the first one seeds the file, the others find it.
  for (const name of SERVER_NAMES) servers.set(name, await connectStdio(scripts[name], file));
}, 180_000);

afterAll(async () => {
  await Promise.all([...servers.values()].map((s) => s.close()));
  tmp.remove();
});

test.each(SERVER_NAMES)('%s: tools, annotations, resources and prompts', async (name) => {
  const { client } = servers.get(name)!;
  const expected = EXPECTED[name];

  const { tools } = await client.listTools();
  const actual = Object.fromEntries(
    tools.map((t) => [t.name, [t.annotations?.readOnlyHint, t.annotations?.destructiveHint, t.annotations?.idempotentHint]]),
  );
  expect(actual).toEqual(expected.tools);
  for (const tool of tools) {
    expect(tool.annotations?.openWorldHint).toBe(false);
    expect(tool.description).toEqual(expect.any(String));
    expect(tool.inputSchema.type).toBe('object');
  }

  const { resources } = await client.listResources();
  expect(resources.map((r) => r.uri).sort()).toEqual(expected.resources);
  for (const resource of resources) {
    expect(resource.mimeType).toBe('application/json');
    // Every resource reads as JSON for the default tenant.
    await expect(readJsonResource(client, resource.uri)).resolves.toBeDefined();
  }

  if (expected.prompts.length > 0) {
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expected.prompts);
    const prompt = await client.getPrompt({ name: expected.prompts[0]! });
    const first = prompt.messages[0];
    expect(first?.content.type === 'text' && first.content.text.length > 50).toBe(true);
  }
});

test('input schemas carry the documented constraints', async () => {
  const { tools } = await servers.get('admin')!.client.listTools();
  const addUser = tools.find((t) => t.name === 'add_user');
  expect(addUser?.inputSchema.required).toEqual(['name', 'role']);
  expect(addUser?.inputSchema.properties?.role).toMatchObject({ enum: ['student', 'teacher', 'admin'] });
  const { tools: paymentTools } = await servers.get('payments')!.client.listTools();
  const pay = paymentTools.find((t) => t.name === 'process_payment');
  expect(pay?.inputSchema.required).toEqual(['invoiceId', 'amount']);
  expect(pay?.inputSchema.properties?.method).toMatchObject({ enum: ['card', 'bank_transfer'] });
});

test('admin://system_status counts the demo school', async () => {
  const status = await readJsonResource(servers.get('admin')!.client, 'admin://system_status');
  expect(status).toMatchObject({ tenantId: 'demo', students: 3, teachers: 1, admins: 1, classes: 2, unpaidInvoices: 1, outstanding: { EUR: 250 } });
});

test("the host's argument validator compiles every tool schema", async () => {
  const warnings: string[] = [];
  const validator = createArgumentValidator({ logger: { warn: (_obj: object, msg: string) => void warnings.push(msg) } });
  for (const name of SERVER_NAMES) {
    const { tools } = await servers.get(name)!.client.listTools();
    for (const tool of tools) validator.validate(tool.inputSchema, {});
  }
  expect(warnings).toEqual([]);
  const { tools } = await servers.get('comms')!.client.listTools();
  const sendEmail = tools.find((t) => t.name === 'send_email')!;
  expect(validator.validate(sendEmail.inputSchema, { to: 'not-an-email', subject: 's', body: 'b' }).ok).toBe(false);
  expect(validator.validate(sendEmail.inputSchema, { to: 'bob@school.example', subject: 's', body: 'b' }).ok).toBe(true);
});
