// Forms from JSON Schema, for a server's question (elicitation) and a tool's arguments: one field per
// property, each by its kind as form libraries render them, checked while typing against the same
// constraints the API checks (src/validation/json-schema.ts) plus the formats the server expects.
import { html } from './lib.js';

/** `[{ value, label }]` of a titled (`oneOf`/`anyOf` of `const` + `title`) or untitled enum, else undefined. */
function optionsOf(p) {
  if (!p || typeof p !== 'object') return undefined;
  if (Array.isArray(p.enum)) {
    const names = Array.isArray(p.enumNames) ? p.enumNames : [];
    return p.enum.map((v, i) => ({ value: v, label: String(names[i] ?? v) }));
  }
  const alts = Array.isArray(p.oneOf) ? p.oneOf : Array.isArray(p.anyOf) ? p.anyOf : undefined;
  if (alts && alts.length > 0 && alts.every((a) => a && 'const' in a)) return alts.map((a) => ({ value: a.const, label: String(a.title ?? a.const) }));
  return undefined;
}

const INPUT_TYPES = { email: 'email', uri: 'url', url: 'url', date: 'date', 'date-time': 'datetime-local', time: 'time' };

/** The fields of an object schema, each with its kind, label, constraints and default. */
export function fieldsOf(schema, { json = true } = {}) {
  const props = schema && typeof schema === 'object' && schema.properties ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.entries(props).map(([name, p]) => {
    const options = optionsOf(p);
    const itemOptions = p.type === 'array' ? optionsOf(p.items) : undefined;
    const kind = options
      ? options.length <= 3 ? 'radio' : 'select'
      : itemOptions
        ? 'multi'
        : ['string', 'number', 'integer', 'boolean'].includes(p.type)
          ? p.type
          : json ? 'json' : 'string';
    return {
      name,
      kind,
      label: p.title ?? name,
      description: p.description,
      required: required.has(name),
      options: options ?? itemOptions,
      inputType: kind === 'string' ? INPUT_TYPES[p.format] ?? 'text' : undefined,
      format: p.format,
      schema: p,
      fallback: p.default,
    };
  });
}

/** The form's first values: each field's default, in the form's own terms (text for inputs). */
export function initialValues(fields) {
  const values = {};
  for (const f of fields) {
    if (f.fallback === undefined) continue;
    values[f.name] = f.kind === 'multi' ? [...f.fallback] : f.kind === 'boolean' ? Boolean(f.fallback) : f.kind === 'json' ? JSON.stringify(f.fallback) : String(f.fallback);
  }
  return values;
}

const isEmpty = (f, v) => v === undefined || v === '' || (f.kind === 'multi' && v.length === 0);
/** A string's length as JSON Schema counts it: in code points (an emoji is one), not UTF-16 units. */
const lengthOf = (v) => [...v].length;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
// A scheme, then either an authority with a host (https://host…) or an empty one before a path
// (file:///…), or anything but "//" (mailto:a@b, urn:isbn:…): RFC 3986's absolute URI, loosely.
const ABSOLUTE_URI = /^[a-z][a-z0-9+.-]*:(?:\/\/(?:[^\s/?#]+\S*|\/\S+)|(?!\/\/)\S+)$/i;

function formatProblem(format, v) {
  if (format === 'email' && !EMAIL.test(v)) return 'must be an email address';
  if ((format === 'uri' || format === 'url') && !ABSOLUTE_URI.test(v)) return 'must be an absolute URI (https://…, mailto:…, urn:…)';
  if (format === 'date' && (!DATE.test(v) || Number.isNaN(Date.parse(v)))) return 'must be a date (YYYY-MM-DD)';
  return null;
}

/** What is wrong with field `f`'s value `v`, or null. */
export function problemOf(f, v) {
  const s = f.schema;
  if (isEmpty(f, v)) return f.required && f.kind !== 'boolean' ? 'required' : null;
  switch (f.kind) {
    case 'number':
    case 'integer': {
      const n = Number(v);
      if (String(v).trim() === '' || !Number.isFinite(n)) return 'must be a number';
      if (f.kind === 'integer' && !Number.isInteger(n)) return 'must be a whole number';
      if (typeof s.minimum === 'number' && n < s.minimum) return `must be at least ${s.minimum}`;
      if (typeof s.maximum === 'number' && n > s.maximum) return `must be at most ${s.maximum}`;
      if (typeof s.exclusiveMinimum === 'number' && n <= s.exclusiveMinimum) return `must be more than ${s.exclusiveMinimum}`;
      if (typeof s.exclusiveMaximum === 'number' && n >= s.exclusiveMaximum) return `must be less than ${s.exclusiveMaximum}`;
      return null;
    }
    case 'string': {
      if (typeof s.minLength === 'number' && lengthOf(v) < s.minLength) return `must be at least ${s.minLength} characters`;
      if (typeof s.maxLength === 'number' && lengthOf(v) > s.maxLength) return `must be at most ${s.maxLength} characters`;
      if (typeof s.pattern === 'string') {
        try {
          if (!new RegExp(s.pattern, 'u').test(v)) return `must match ${s.pattern}`;
        } catch {
          // A pattern this browser cannot read: the API checks it.
        }
      }
      return formatProblem(f.format, v);
    }
    case 'multi':
      if (typeof s.minItems === 'number' && v.length < s.minItems) return `choose at least ${s.minItems}`;
      if (typeof s.maxItems === 'number' && v.length > s.maxItems) return `choose at most ${s.maxItems}`;
      return null;
    case 'json':
      try {
        JSON.parse(v);
        return null;
      } catch {
        return 'must be JSON (e.g. {"a": 1} or [1, 2])';
      }
    default:
      return null;
  }
}

/** The problems of the whole form, by field name (empty: the form can be sent). */
export function problemsOf(fields, values) {
  const problems = {};
  for (const f of fields) {
    const p = problemOf(f, values[f.name]);
    if (p) problems[f.name] = p;
  }
  return problems;
}

/**
 * The object the form's values make: numbers as numbers, empty optional fields left out, a required
 * checkbox never touched as the unchecked one it shows (false).
 */
export function contentOf(fields, values) {
  const out = {};
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined && f.kind === 'boolean' && f.required) out[f.name] = false;
    if (isEmpty(f, v)) continue;
    if (f.kind === 'number' || f.kind === 'integer') out[f.name] = Number(v);
    else if (f.kind === 'json') out[f.name] = JSON.parse(v);
    else if ((f.kind === 'select' || f.kind === 'radio') && typeof f.options[0]?.value !== 'string') out[f.name] = f.options.find((o) => String(o.value) === v)?.value ?? v;
    else out[f.name] = v;
  }
  return out;
}

function Input({ f, value, set }) {
  const on = (e) => set(f.name, e.currentTarget.value);
  switch (f.kind) {
    case 'select':
      return html`<select name=${f.name} value=${value ?? ''} onChange=${on}>
        ${!f.required || value === undefined ? html`<option value="">—</option>` : null}
        ${f.options.map((o) => html`<option value=${String(o.value)}>${o.label}</option>`)}
      </select>`;
    case 'radio':
      return html`<span class="choices">${f.options.map(
        (o) => html`<label class="choice"><input type="radio" name=${f.name} value=${String(o.value)} checked=${value === String(o.value)} onChange=${on} /> ${o.label}</label>`,
      )}</span>`;
    case 'multi': {
      const chosen = value ?? [];
      const toggle = (v, on) => set(f.name, on ? [...chosen.filter((c) => c !== v), v] : chosen.filter((c) => c !== v));
      return html`<span class="choices">${f.options.map(
        (o) => html`<label class="choice"><input type="checkbox" name=${f.name} value=${String(o.value)} checked=${chosen.includes(o.value)} onChange=${(e) => toggle(o.value, e.currentTarget.checked)} /> ${o.label}</label>`,
      )}</span>`;
    }
    case 'boolean':
      return html`<label class="choice"><input type="checkbox" name=${f.name} checked=${Boolean(value)} onChange=${(e) => set(f.name, e.currentTarget.checked)} /> ${f.label}</label>`;
    case 'json':
      return html`<textarea name=${f.name} rows="3" placeholder="JSON" value=${value ?? ''} onInput=${on}></textarea>`;
    case 'number':
    case 'integer':
      return html`<input type="number" name=${f.name} value=${value ?? ''} min=${f.schema.minimum} max=${f.schema.maximum} step=${f.kind === 'integer' ? 1 : 'any'} onInput=${on} />`;
    default:
      return html`<input type=${f.inputType} name=${f.name} value=${value ?? ''} onInput=${on} />`;
  }
}

/** The hint beside a field's label: its kind and bounds, so the user knows before typing. */
function hintOf(f) {
  const s = f.schema;
  const parts = [];
  if (f.kind === 'integer' || f.kind === 'number') {
    parts.push(f.kind === 'integer' ? 'whole number' : 'number');
    if (typeof s.minimum === 'number' && typeof s.maximum === 'number') parts.push(`${s.minimum} to ${s.maximum}`);
    else if (typeof s.minimum === 'number') parts.push(`at least ${s.minimum}`);
    else if (typeof s.maximum === 'number') parts.push(`at most ${s.maximum}`);
  }
  if (f.kind === 'multi' && (s.minItems || s.maxItems)) parts.push(`choose ${s.minItems ?? 0} to ${s.maxItems ?? f.options.length}`);
  if (f.kind === 'json') parts.push('JSON');
  return parts.join(', ');
}

/** One labelled input per field, each with its problem while it has one. */
export function SchemaFields({ fields, values, set, problems }) {
  return fields.map((f) => {
    const hint = hintOf(f);
    const problem = problems[f.name];
    return html`<div class=${`field${problem ? ' invalid' : ''}`} data-field=${f.name} data-kind=${f.kind}>
      ${f.kind === 'boolean' ? null : html`<span class="label">${f.label}${f.required ? html`<span class="required" title="required"> *</span>` : ''}</span>`}
      ${f.description || hint ? html`<span class="muted hint">${[f.description, hint].filter(Boolean).join(' — ')}</span>` : null}
      <${Input} f=${f} value=${values[f.name]} set=${set} />
      ${problem && html`<span class="problem" role="alert">${f.label}: ${problem}</span>`}
    </div>`;
  });
}
