// A server's question during a tool call, answered by the turn's owner: the form its schema asks for
// (checked while typing), a page to open (URL mode: Open goes there and accepts), or leave to use the
// model (sampling).
import { useState } from 'preact/hooks';
import { html } from './lib.js';
import { contentOf, fieldsOf, initialValues, problemsOf, SchemaFields } from './schema-form.js';

/** A form's state: values (defaults first), which fields were touched, problems to show. */
export function useSchemaForm(schema, opts) {
  const [fields] = useState(() => fieldsOf(schema, opts));
  const [values, setValues] = useState(() => initialValues(fields));
  const [touched, setTouched] = useState({});
  const [all, setAll] = useState(false);
  const problems = problemsOf(fields, values);
  const shown = Object.fromEntries(Object.entries(problems).filter(([name]) => all || touched[name]));
  const set = (name, v) => {
    setValues((vs) => ({ ...vs, [name]: v }));
    setTouched((t) => (t[name] ? t : { ...t, [name]: true }));
  };
  /** The content to send, or null (then every problem shows). */
  const submit = () => {
    if (Object.keys(problems).length > 0) {
      setAll(true);
      return null;
    }
    return contentOf(fields, values);
  };
  return { fields, values, set, problems: shown, submit };
}

export function Question({ q, turnId, api }) {
  const form = useSchemaForm(q.schema, { json: false });
  const [error, setError] = useState(null);
  const answer = async (action) => {
    let body = { action };
    if (action === 'accept' && q.mode === 'form') {
      const content = form.submit();
      if (!content) return;
      body = { action, content };
    }
    try {
      await api('POST', `/v1/turns/${encodeURIComponent(turnId)}/inputs/${encodeURIComponent(q.toolCallId)}`, body);
      setError(null);
    } catch (e) {
      setError(e.message);
    }
  };
  if (q.action) return html`<div class="approval muted" data-question=${q.toolCallId}>${q.server} asked: ${q.message} — ${q.action}</div>`;
  const buttons = (ok) => html`<div class="row"><button class="ok" type="submit">${ok}</button><button class="plain" type="button" onClick=${() => answer('decline')}>Decline</button><button class="plain" type="button" onClick=${() => answer('cancel')}>Cancel</button></div>`;
  if (q.mode === 'url' || q.mode === 'sampling') {
    const open = () => {
      // The server's own page, in a new tab without access to this one.
      if (q.mode === 'url') window.open(q.url, '_blank', 'noopener,noreferrer');
      return answer('accept');
    };
    return html`<form class="approval try" data-question=${q.toolCallId} data-mode=${q.mode} onSubmit=${(e) => (e.preventDefault(), open())}>
      <div><strong>${q.server}</strong> ${q.mode === 'url' ? html`asks you to open <a href=${q.url} target="_blank" rel="noopener noreferrer">${q.url}</a>: ${q.message}` : html`asks for your leave: ${q.message}`}</div>
      ${error && html`<p class="error">${error}</p>`}
      ${buttons(q.mode === 'url' ? 'Open' : 'Allow')}
    </form>`;
  }
  return html`<form class="approval try" data-question=${q.toolCallId} data-mode="form" noValidate onSubmit=${(e) => (e.preventDefault(), answer('accept'))}>
    <div><strong>${q.server}</strong> asks: ${q.message}</div>
    <${SchemaFields} fields=${form.fields} values=${form.values} set=${form.set} problems=${form.problems} />
    ${error && html`<p class="error">${error}</p>`}
    ${buttons('Send')}
  </form>`;
}
