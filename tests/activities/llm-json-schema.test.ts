import { toLlmTools } from '../../src/core/host-loop';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import type { CatalogTool } from '../../src/shared/tool-types';
import { clientFor, PROVIDER_ROWS, sentTo } from '../helpers/providers';

/**
 * A tool schema written in JSON Schema 2020-12 reaches the model as written (issue 22 §1): from the
 * catalog, through the turn's tool list, to each provider's request body as its real SDK sends it
 * over HTTP to the demo model's stand-in. No adapter rewrites or drops a keyword (`$schema`, `$defs`
 * with a `$ref` into them, `$anchor` and a `$ref` to it, `prefixItems`, `items: false`).
 */
const inputSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    from: { $ref: '#/$defs/point' },
    to: { $ref: '#/$defs/point' },
    unit: { $ref: '#unit' },
    leg: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer', minimum: 0 }], items: false },
  },
  required: ['from', 'to'],
  additionalProperties: false,
  $defs: {
    point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'], additionalProperties: false },
    unit: { $anchor: 'unit', type: 'string', enum: ['m', 'km'] },
  },
};
const tool: CatalogTool = { name: 'maps__route', server: 'maps', tool: 'route', description: 'Routes between two points.', inputSchema };
// What the catalog held, as sent: a deep copy, so a mutation by an adapter would show too.
const written: unknown = JSON.parse(JSON.stringify(inputSchema));

let model: DemoModelHandle;

beforeAll(async () => {
  model = await startDemoModel({ rules: { scripts: [{ name: 'route', match: 'route me', steps: [{ text: 'routed' }] }] } });
});
afterAll(async () => {
  await model.close();
});

/** The schema of the one tool in a request body, where each provider's wire format puts it. */
function schemaInBody(provider: string, body: unknown): unknown {
  const b = body as {
    tools?: Array<{ function?: { name: string; parameters: unknown }; name?: string; input_schema?: unknown; functionDeclarations?: Array<{ name: string; parametersJsonSchema: unknown }> }>;
  };
  const tools = b.tools ?? [];
  if (provider === 'openai') return tools.find((t) => t.function?.name === tool.name)?.function?.parameters;
  if (provider === 'anthropic') return tools.find((t) => t.name === tool.name)?.input_schema;
  return tools.flatMap((t) => t.functionDeclarations ?? []).find((d) => d.name === tool.name)?.parametersJsonSchema;
}

describe.each(PROVIDER_ROWS)('%s', (name, provider) => {
  test('a JSON Schema 2020-12 tool schema is in the request body exactly as the server wrote it', async () => {
    model.resetRequests();
    const llm = clientFor(provider, model, 'k');
    const res = await llm.complete({ turnId: 't-schema', step: 1, messages: [{ role: 'user', content: 'route me' }], tools: toLlmTools([tool]) });
    expect(res.text).toBe('routed');
    const sent = sentTo(provider, model);
    expect(sent).toHaveLength(1);
    expect(schemaInBody(name, sent[0]?.body)).toStrictEqual(written);
    expect(inputSchema).toStrictEqual(written);
  });
});
