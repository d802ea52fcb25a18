/**
 * A flat elicitation schema (primitive properties, as MCP allows) using every keyword the console's form
 * checks while typing (console/schema-form.js), and a table of values per field: valid, just inside and
 * just outside each bound, patterns that match or not, bad formats, empty required fields. Each case is
 * the whole form (`BASELINE`, valid, with one field changed), so the console's verdict on the form and
 * the API's on the content it makes can be compared (tests/browser/console-sessions.browser.test.ts).
 */
import { createArgumentValidator } from '../../src/validation/json-schema';

export const FORM_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', minLength: 2, maxLength: 5 },
    nickname: { type: 'string', minLength: 3 },
    code: { type: 'string', pattern: '^[A-Z]{2}-\\d+$' },
    tag: { type: 'string', pattern: 'ab' },
    email: { type: 'string', format: 'email' },
    homepage: { type: 'string', format: 'uri' },
    birthdate: { type: 'string', format: 'date' },
    count: { type: 'integer', minimum: 1, maximum: 10 },
    score: { type: 'number', minimum: -1.5, maximum: 2.5 },
    ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
    agree: { type: 'boolean', title: 'I agree' },
    notify: { type: 'boolean' },
    colour: { type: 'string', enum: ['red', 'green', 'blue', 'cyan'] },
    toppings: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c', 'd'] }, minItems: 1, maxItems: 3 },
    extras: { type: 'array', items: { type: 'string', enum: ['x', 'y', 'z'] }, minItems: 2 },
  },
  required: ['name', 'code', 'email', 'count', 'ratio', 'agree', 'toppings'],
} as const;

/** The kind the form gives each field, so the table is known to reach each of them. */
export const FORM_KINDS = {
  name: 'string', nickname: 'string', code: 'string', tag: 'string', email: 'string', homepage: 'string', birthdate: 'string',
  count: 'integer', score: 'number', ratio: 'number', agree: 'boolean', notify: 'boolean', colour: 'select', toppings: 'multi', extras: 'multi',
};

/** A value in the form's own terms: text from an input, a checkbox's boolean, a multi-select's array; undefined: never set. */
export type FormValue = string | boolean | string[] | undefined;

export const BASELINE: Record<string, FormValue> = {
  name: 'Ada', code: 'AB-12', email: 'ada@example.org', homepage: 'https://example.org/ada', birthdate: '1815-12-10',
  count: '5', ratio: '0.5', agree: true, colour: 'red', toppings: ['a'],
};

export interface FormCase {
  field: string;
  value: FormValue;
  /**
   * Only the value's `format` is wrong. The API leaves formats to the server (src/validation/json-schema.ts:
   * `validateFormats: false`) while the console checks the common ones, so there the console refuses what
   * the API takes: the one difference by design, asserted as such.
   */
  badFormat?: true;
}

const of = (field: string, ...values: FormValue[]): FormCase[] => values.map((value) => ({ field, value }));
const badFormats = (field: string, ...values: string[]): FormCase[] => values.map((value) => ({ field, value, badFormat: true }));

export const FORM_CASES: FormCase[] = [
  // Lengths (in characters, i.e. code points: an emoji is one), bounds 2..5; required.
  ...of('name', 'Ad', 'A', 'Adams', 'Adamss', '', undefined, '😀', '😀😀', '😀😀😀', 'Ad😀ms', 'Ad😀mss'),
  // Optional with a minimum length: empty is left out, not too short.
  ...of('nickname', '', undefined, 'ab', 'abc'),
  // Anchored pattern; required.
  ...of('code', 'AB-1', 'AB-123456', 'ab-1', 'AB-', 'xAB-1', 'AB-1x', ''),
  // Unanchored pattern: a match anywhere will do.
  ...of('tag', 'ab', 'xaby', 'ba', 'a b'),
  ...of('email', 'grace@example.org', ''),
  ...badFormats('email', 'grace', 'grace@example', 'grace @example.org'),
  ...of('homepage', 'https://example.org/x?y=1', '', 'mailto:ada@example.org', 'urn:isbn:0451450523', 'file:///tmp/notes.txt'),
  ...badFormats('homepage', 'example.org', 'https://', 'https:///', 'mailto: ada@example.org'),
  ...of('birthdate', '2024-02-29', ''),
  ...badFormats('birthdate', '2024-13-01', '10/12/1815', '1815-12-1'),
  // Integer, bounds 1..10 inclusive; required.
  ...of('count', '1', '10', '0', '11', '5.5', '5.0', '1e1', 'abc', '-1', ''),
  // Number, bounds -1.5..2.5 inclusive; optional.
  ...of('score', '-1.5', '-1.6', '2.5', '2.51', '0', '', 'x'),
  // Number, bounds 0..1 exclusive; required.
  ...of('ratio', '0', '1', '0.001', '0.999', '-0.5', '1.5', ''),
  // A required checkbox left untouched is an unchecked one.
  ...of('agree', true, false, undefined),
  ...of('notify', true, false, undefined),
  ...of('colour', 'cyan', undefined),
  // Multi-select, 1..3 choices; required.
  ...of('toppings', [], ['a', 'b', 'c'], ['a', 'b', 'c', 'd'], undefined),
  // Optional multi-select with a minimum: none is left out, one is too few.
  ...of('extras', [], ['x'], ['x', 'y'], ['x', 'y', 'z']),
];

/** The form's values for `c`: the baseline with its field set (or unset). */
export function valuesOf(c: FormCase): Record<string, FormValue> {
  const values = { ...BASELINE, [c.field]: c.value };
  if (c.value === undefined) delete values[c.field];
  return values;
}

/** What the page says of one case: the form's problems and the content it makes, as JSON (as sent). */
export interface PageVerdict {
  problems: Record<string, string>;
  content: string;
}

/**
 * The script to evaluate on a console page (its import map resolves schema-form.js's imports): the kinds
 * of the fields and a verdict per case. A string, not a function: ts-jest would turn a dynamic import()
 * in a function into require().
 */
export function formScript(): string {
  return `(async () => {
    const { fieldsOf, problemsOf, contentOf } = await import('/console/schema-form.js');
    const fields = fieldsOf(${JSON.stringify(FORM_SCHEMA)});
    return {
      kinds: Object.fromEntries(fields.map((f) => [f.name, f.kind])),
      verdicts: ${JSON.stringify(FORM_CASES.map(valuesOf))}.map((values) => ({ problems: problemsOf(fields, values), content: JSON.stringify(contentOf(fields, values)) })),
    };
  })()`;
}

/**
 * The cases where the console and the API (`createArgumentValidator`, as POST
 * /v1/turns/:turnId/inputs/:toolCallId checks an answer) disagree, each described; and how many cases
 * both refuse and both take (a judge needs cases on both sides).
 */
export function disagreements(verdicts: readonly PageVerdict[]): { mismatches: string[]; refused: number; taken: number } {
  const validator = createArgumentValidator();
  const mismatches: string[] = [];
  let refused = 0;
  let taken = 0;
  FORM_CASES.forEach((c, i) => {
    const { problems, content } = verdicts[i] ?? { problems: { '?': 'no verdict from the page' }, content: '{}' };
    const consoleTakes = Object.keys(problems).length === 0;
    const api = validator.validate(FORM_SCHEMA, JSON.parse(content), 'answer');
    if (c.badFormat ? !api.ok || consoleTakes : api.ok !== consoleTakes) {
      const said = `console ${consoleTakes ? 'takes it' : `refuses it (${JSON.stringify(problems)})`}, API ${api.ok ? 'takes it' : `refuses it (${api.message})`}`;
      mismatches.push(`${c.field} = ${JSON.stringify(c.value)}${c.badFormat ? ' (bad format: the console must refuse it, the API take it)' : ''}: ${said}; content ${content}`);
    } else if (api.ok && consoleTakes) taken++;
    else if (!api.ok && !consoleTakes) refused++;
  });
  return { mismatches, refused, taken };
}
