import { createArgumentValidator } from '../../src/validation/json-schema';

const noteSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, text: { type: 'string', minLength: 1 } },
  required: ['id', 'text'],
  additionalProperties: false,
};

describe('createArgumentValidator', () => {
  const validator = createArgumentValidator();

  it('accepts valid arguments', () => {
    expect(validator.validate(noteSchema, { id: 'n1', text: 'hello' })).toEqual({ ok: true });
  });

  it('explains a wrong type with the JSON pointer of the field', () => {
    expect(validator.validate(noteSchema, { id: 'n1', text: 5 })).toEqual({
      ok: false,
      message: 'arguments invalid: /text must be string',
    });
  });

  it('reports every problem at once, short and readable', () => {
    expect(validator.validate(noteSchema, { text: 5, extra: true })).toEqual({
      ok: false,
      message: 'arguments invalid: missing required property "id"; unexpected property "extra"; /text must be string',
    });
  });

  it('describes nested, enum and const failures', () => {
    const schema = {
      type: 'object',
      properties: {
        items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
        mode: { enum: ['fast', 'slow'] },
        version: { const: 2 },
      },
    };
    const result = validator.validate(schema, { items: [{ name: 1 }, {}], mode: 'medium', version: 3 });
    expect(result.ok).toBe(false);
    const message = result.ok ? '' : result.message;
    expect(message).toContain('/items/0/name must be string');
    expect(message).toContain('/items/1: missing required property "name"');
    expect(message).toContain('/mode must be one of "fast", "slow"');
    expect(message).toContain('/version must be 2');
  });

  it('says what the arguments as a whole must be', () => {
    expect(validator.validate({ type: 'object' }, 'text')).toEqual({ ok: false, message: 'arguments invalid: arguments must be object' });
  });

  it('caps long error lists', () => {
    const properties = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, { type: 'string' }]));
    const args = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, i]));
    const result = validator.validate({ type: 'object', properties }, args);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain('; and 4 more');
      expect(result.message.split(';')).toHaveLength(6);
    }
  });

  it('supports draft 2020-12 and draft-07 schemas by their $schema', () => {
    const tuple = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] } },
    };
    expect(validator.validate(tuple, { pair: ['a', 1] })).toEqual({ ok: true });
    expect(validator.validate(tuple, { pair: [1, 1] })).toEqual({ ok: false, message: 'arguments invalid: /pair/0 must be string' });

    const draft7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: ['a'] };
    expect(validator.validate(draft7, {})).toEqual({ ok: false, message: 'arguments invalid: missing required property "a"' });
  });

  it('leaves formats to the server', () => {
    expect(validator.validate({ type: 'object', properties: { mail: { type: 'string', format: 'email' } } }, { mail: 'nope' })).toEqual({
      ok: true,
    });
  });

  it('lets two tools declare the same $id', () => {
    const a = { $id: 'https://example.test/args.json', type: 'object', required: ['a'] };
    const b = { $id: 'https://example.test/args.json', type: 'object', required: ['b'] };
    expect(validator.validate(a, { a: 1 })).toEqual({ ok: true });
    expect(validator.validate(b, { b: 1 })).toEqual({ ok: true });
    expect(validator.validate(b, { a: 1 })).toEqual({ ok: false, message: 'arguments invalid: missing required property "b"' });
  });

  it('passes arguments through when the schema cannot be compiled, warning once', () => {
    const warnings: string[] = [];
    const v = createArgumentValidator({ logger: { warn: (_obj, msg) => warnings.push(msg ?? '') } });
    const broken = { type: 'object', properties: { a: { type: 'no-such-type' } } };
    expect(v.validate(broken, { a: 1 })).toEqual({ ok: true });
    // Same schema content, different object: served from the cache, not recompiled.
    expect(v.validate(JSON.parse(JSON.stringify(broken)), { a: 1 })).toEqual({ ok: true });
    expect(warnings).toHaveLength(1);
    expect(v.validate({ $ref: '#/definitions/missing' }, {})).toEqual({ ok: true });
  });

  it('treats a missing schema as "no check"', () => {
    expect(validator.validate(undefined, { anything: true })).toEqual({ ok: true });
    expect(validator.validate(null, { anything: true })).toEqual({ ok: true });
  });
});
