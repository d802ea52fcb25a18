// The console: a browser client of the public API only (the same routes as any frontend), built with
// Preact hooks and htm tagged templates, no build step. Tabs: chat (live text, tool-call cards, inline
// approvals, cancel, each turn's trace and a link to it in the Temporal UI), approvals inbox, servers,
// tools (with a form to run one through a turn).
import { h, render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

const html = htm.bind(h);
const TOKEN_KEY = 'dmh.token';

/** The JWT's claims, for showing who is signed in (the API verifies the token; this only reads it). */
function claimsOf(token) {
  try {
    return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return {};
  }
}

function useApi(token, onUnauthorized) {
  return useCallback(
    async (method, route, body) => {
      const res = await fetch(route, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = await res.json().catch(() => ({}));
      if (res.status === 401) onUnauthorized(json.error?.message ?? 'The token was refused.');
      if (!res.ok) throw new Error(json.error?.message ?? `HTTP ${res.status}`);
      return json;
    },
    [token, onUnauthorized],
  );
}

function SignIn({ onToken, reason }) {
  const [text, setText] = useState('');
  const [demo, setDemo] = useState(null);
  useEffect(() => {
    fetch('/console/demo-tokens').then((r) => (r.ok ? r.json() : null)).then(setDemo, () => setDemo(null));
  }, []);
  return html`<main>
    <div class="card">
      <h2>Sign in</h2>
      ${reason && html`<p class="error">${reason}</p>`}
      <p class="muted">Paste a bearer token for this API (<code>npm run -s token -- --role admin</code> prints one).</p>
      <textarea id="token" rows="3" value=${text} onInput=${(e) => setText(e.currentTarget.value)} placeholder="eyJhbGciOi…"></textarea>
      <p><button class="primary" id="sign-in" onClick=${() => text.trim() && onToken(text.trim())}>Sign in</button></p>
      ${demo &&
      html`<p class="muted">Local mode: sign in as a demo user.</p>
        <div class="row">${Object.entries(demo.tokens).map(([role, token]) => html`<button class="plain" data-role=${role} onClick=${() => onToken(token)}>${role}</button>`)}</div>`}
    </div>
  </main>`;
}

/** Follows one turn's SSE stream (EventSource cannot send headers: the token goes as ?access_token). */
function followTurn(turnId, token, update) {
  const source = new EventSource(`/v1/turns/${encodeURIComponent(turnId)}/events?access_token=${encodeURIComponent(token)}`);
  const on = (type, fn) => source.addEventListener(type, (e) => fn(JSON.parse(e.data)));
  const end = (patch) => {
    source.close();
    update((t) => ({ ...t, ...patch, running: false }));
  };
  let live = '';
  // The message trace: every durable event with its server time, in order (not the stream's opening
  // `turn` event, the API's own and without an id: the turn card already shows it running).
  const trace = (type, d) => update((t) => ({ ...t, trace: [...t.trace, { type, at: Date.parse(d.at), data: d }] }));
  for (const type of ['status', 'tool_call_started', 'tool_call_finished', 'notice', 'approval_required', 'approval_decided', 'authorization_required', 'authorization_completed', 'input_required', 'input_provided', 'text', 'done', 'error', 'cancelled']) {
    source.addEventListener(type, (e) => {
      const d = e.data ? JSON.parse(e.data) : null;
      if (d && d.at) trace(type, d);
    });
  }
  on('status', (d) => d.phase === 'calling_llm' && ((live = ''), update((t) => ({ ...t, live: '' }))));
  // Queued behind another turn of the session: what holds it up (sent when that changes), until it starts.
  on('waiting', (d) => update((t) => ({ ...t, waiting: d })));
  on('status', (d) => d.phase !== 'queued' && update((t) => (t.waiting ? { ...t, waiting: null } : t)));
  on('text_delta', (d) => {
    live = live.slice(0, d.offset) + d.text;
    update((t) => ({ ...t, live }));
  });
  on('text_reset', () => ((live = ''), update((t) => ({ ...t, live: '' }))));
  // Live, no id: the latest progress a tool call's server reported.
  on('tool_progress', (d) => update((t) => ({ ...t, tools: t.tools.map((c) => (c.id === d.toolCallId ? { ...c, progress: d } : c)) })));
  on('tool_call_started', (d) => update((t) => ({ ...t, tools: [...t.tools, { id: d.toolCallId, name: d.name, args: d.arguments, state: 'running' }] })));
  on('tool_call_finished', (d) =>
    update((t) => ({ ...t, tools: t.tools.map((c) => (c.id === d.toolCallId ? { ...c, state: d.isError ? 'failed' : 'completed', result: d.message ?? d.result } : c)) })),
  );
  on('notice', (d) => update((t) => ({ ...t, notices: [...t.notices, d.message] })));
  on('approval_required', (d) => update((t) => ({ ...t, approvals: [...t.approvals, { toolCallId: d.toolCallId, name: d.name, args: d.arguments, decision: null }] })));
  on('approval_decided', (d) => update((t) => ({ ...t, approvals: t.approvals.map((a) => (a.toolCallId === d.toolCallId ? { ...a, decision: d.decision } : a)) })));
  // An OAuth server needs the user's consent: the turn waits until they come back from this link.
  on('authorization_required', (d) => update((t) => ({ ...t, authorizations: [...(t.authorizations ?? []), { toolCallId: d.toolCallId, server: d.server, url: d.authorizationUrl, outcome: null }] })));
  // A server asks the user something during a tool call: a form until the owner answers.
  on('input_required', (d) =>
    update((t) => ({ ...t, questions: [...(t.questions ?? []), { toolCallId: d.toolCallId, server: d.server, mode: d.mode ?? 'form', url: d.url, message: d.message, schema: d.requestedSchema, action: null }] })),
  );
  on('input_provided', (d) =>
    update((t) => ({ ...t, questions: (t.questions ?? []).map((q) => (q.toolCallId === d.toolCallId && !q.action ? { ...q, action: d.action } : q)) })),
  );
  on('authorization_completed', (d) =>
    update((t) => ({ ...t, authorizations: (t.authorizations ?? []).map((a) => (a.toolCallId === d.toolCallId && !a.outcome ? { ...a, outcome: d.outcome } : a)) })),
  );
  on('text', (d) => update((t) => ({ ...t, text: d.text })));
  on('done', () => end({ status: 'completed' }));
  on('error', (d) => (d && d.message ? end({ status: 'failed', error: d.message }) : undefined));
  on('cancelled', () => end({ status: 'cancelled' }));
  return () => source.close();
}

function ToolCard({ call }) {
  return html`<div class=${`tool ${call.state}`} data-tool=${call.name}>
    <strong>${call.name}</strong> <span class="muted">${call.state}</span>
    ${call.state === 'running' && call.progress && html`<span class="progress" data-progress=${call.progress.progress}>
      ${call.progress.total ? html`<progress max=${call.progress.total} value=${call.progress.progress}></progress> ${call.progress.progress}/${call.progress.total}` : call.progress.progress}
      ${call.progress.message ? ` ${call.progress.message}` : ''}</span>`}
    <div><code>${JSON.stringify(call.args ?? {})}</code></div>
    ${call.result && html`<details><summary>result</summary><pre>${String(call.result)}</pre></details>`}
  </div>`;
}

/** One line of a turn's trace: what happened, in words. */
function traceLine(e) {
  const d = e.data;
  switch (e.type) {
    case 'status':
      if (d.phase === 'calling_llm') return ['LLM', `step ${d.step}: request to the model`];
      if (d.phase === 'calling_tools') return ['tools', `step ${d.step}: ${d.count} call${d.count === 1 ? '' : 's'}`];
      return ['turn', d.phase ?? d.status];
    case 'tool_call_started':
      return ['MCP →', `${d.server}/${d.tool} ${JSON.stringify(d.arguments ?? {})}`];
    case 'tool_call_finished':
      return ['MCP ←', `${d.name} ${d.isError ? 'failed' : 'ok'}: ${String(d.message ?? d.result ?? '').slice(0, 300)}`];
    case 'notice':
      return ['notice', d.message];
    case 'approval_required':
      return ['approval', `${d.name} waits for a decision`];
    case 'approval_decided':
      return ['approval', `${d.toolCallId}: ${d.decision}${d.by ? ` by ${d.by}` : ''}`];
    case 'authorization_required':
      return ['OAuth', `${d.name} waits for your authorization of ${d.server}`];
    case 'authorization_completed':
      return ['OAuth', `${d.server}: ${d.outcome}`];
    case 'input_required':
      if (d.mode === 'url') return ['question', `${d.server} asks you to open ${d.url}: ${d.message}`];
      if (d.mode === 'sampling') return ['sampling', `${d.message} (waits for your leave)`];
      return ['question', `${d.server} asks: ${d.message}`];
    case 'input_provided':
      return ['question', `${d.server}: ${d.action}${d.timedOut ? ' (timed out)' : ''}`];
    case 'text':
      return ['answer', `${String(d.text ?? '').length} characters`];
    default:
      return [e.type, d.message ?? d.status ?? ''];
  }
}

/** A queued turn's wait: the turn ahead, the decisions it waits for, and the way out. */
function Waiting({ waiting, api }) {
  const act = (route, body) => api('POST', route, body).catch((e) => alert(e.message));
  return html`<div class="waiting" data-waiting=${waiting.behind}>
    <div>Waits for the session's turn ahead, which ${waiting.status === 'awaiting_approval' ? 'waits for a decision' : 'is still running'}.</div>
    ${waiting.pendingApprovals.map(
      (a) => html`<div class="approval" data-approval=${a.toolCallId}>
        <strong>${a.name}</strong> <code>${JSON.stringify(a.arguments ?? {})}</code> <span class="muted">(denied at ${new Date(a.deadline).toLocaleTimeString()} if nobody decides)</span>
        <div class="row"><button class="ok" onClick=${() => act(a.decideUrl, { approve: true })}>Approve</button><button class="bad" onClick=${() => act(a.decideUrl, { approve: false })}>Deny</button></div>
      </div>`,
    )}
    <button class="plain" onClick=${() => act(waiting.cancelUrl)}>Cancel the turn ahead</button>
  </div>`;
}

/** The turn's message trace: LLM steps, MCP requests and results, with times from the server's events. */
function Trace({ turn, link }) {
  if (turn.trace.length === 0) return null;
  const t0 = turn.trace[0].at;
  const started = new Map(turn.trace.filter((e) => e.type === 'tool_call_started').map((e) => [e.data.toolCallId, e.at]));
  return html`<details class="trace" data-trace=${turn.turnId}>
    <summary>Trace (${turn.trace.length} events)</summary>
    <table>
      <thead><tr><th>+ms</th><th>took</th><th>what</th><th>detail</th></tr></thead>
      <tbody>
        ${turn.trace.map((e, i) => {
          const [what, detail] = traceLine(e);
          const next = turn.trace[i + 1];
          // A tool call's time is from its start to its result; a step's until the next event.
          const took = e.type === 'tool_call_finished' && started.has(e.data.toolCallId) ? e.at - started.get(e.data.toolCallId) : next && e.type === 'status' ? next.at - e.at : undefined;
          return html`<tr data-kind=${e.type}><td>${e.at - t0}</td><td>${took === undefined ? '' : `${took} ms`}</td><td>${what}</td><td><code>${detail}</code></td></tr>`;
        })}
      </tbody>
    </table>
    ${link && html`<p><a href=${link} target="_blank" rel="noreferrer">The whole history in the Temporal UI</a></p>`}
  </details>`;
}

function Turn({ turn, api, config }) {
  const decide = (toolCallId, approve) => api('POST', `/v1/turns/${turn.turnId}/approvals/${toolCallId}`, { approve }).catch((e) => alert(e.message));
  const link = config.temporalUiUrl && `${config.temporalUiUrl}/namespaces/${config.namespace}/workflows/${encodeURIComponent(turn.turnId)}`;
  return html`<div class="card turn" data-turn=${turn.turnId} data-status=${turn.status}>
    <div class="msg user"><div class="role">you</div><div class="text">${turn.userText}</div></div>
    ${turn.notices.map((n) => html`<div class="notice">${n}</div>`)}
    ${turn.running && turn.waiting && html`<${Waiting} waiting=${turn.waiting} api=${api} />`}
    ${turn.tools.map((c) => html`<${ToolCard} call=${c} />`)}
    ${(turn.questions ?? []).map((q) => html`<${Question} q=${q} turnId=${turn.turnId} api=${api} />`)}
    ${(turn.authorizations ?? []).map(
      (a) => html`<div class="approval" data-authorization=${a.server}>
        ${a.outcome
          ? html`<span class="muted">${a.server}: ${a.outcome === 'authorized' ? 'authorized' : 'not authorized in time'}</span>`
          : html`<div><strong>${a.server}</strong> needs your permission to act for you.</div>
              <div class="row"><a class="button" href=${a.url} target="_blank" rel="noopener noreferrer">Authorize ${a.server}</a><span class="muted">The turn continues once you are back.</span></div>`}
      </div>`,
    )}
    ${turn.approvals.map(
      (a) => html`<div class="approval" data-approval=${a.toolCallId}>
        <strong>${a.name}</strong> needs approval <code>${JSON.stringify(a.args ?? {})}</code>
        ${a.decision
          ? html`<span class="muted"> — ${a.decision}</span>`
          : html`<div class="row"><button class="ok" onClick=${() => decide(a.toolCallId, true)}>Approve</button><button class="bad" onClick=${() => decide(a.toolCallId, false)}>Deny</button></div>`}
      </div>`,
    )}
    <div class="msg assistant"><div class="role">assistant</div><div class="text answer">${turn.text ?? turn.live ?? ''}</div></div>
    ${turn.error && html`<div class="error">${turn.error}</div>`}
    <${Trace} turn=${turn} link=${link} />
    <div class="row muted">
      <span class="status">${turn.running ? 'running…' : turn.status}</span>
      ${turn.running && html`<button class="plain" onClick=${() => api('POST', `/v1/turns/${turn.turnId}/cancel`).catch((e) => alert(e.message))}>Cancel</button>`}
      ${link && html`<a href=${link} target="_blank" rel="noreferrer">Temporal UI</a>`}
    </div>
  </div>`;
}

/** The chat's state, shared by the chat and the tools tab (a tool tried there runs as a turn of the chat's session). */
function useChat(api, token) {
  const [session, setSession] = useState('console');
  const [turns, setTurns] = useState([]);
  const stops = useRef([]);
  useEffect(() => () => stops.current.forEach((s) => s()), []);
  /** Posts to one of the session's routes and follows the turn it starts. */
  const start = useCallback(
    async (route, body, userText) => {
      const accepted = await api('POST', `/v1/sessions/${encodeURIComponent(session)}/${route}`, body);
      const turn = { turnId: accepted.turnId, userText, tools: [], approvals: [], notices: [], trace: [], running: true, status: 'running', live: '' };
      setTurns((ts) => [...ts, turn]);
      const update = (fn) => setTurns((ts) => ts.map((t) => (t.turnId === turn.turnId ? fn(t) : t)));
      stops.current.push(followTurn(turn.turnId, token, update));
      return accepted;
    },
    [api, token, session],
  );
  return { session, setSession, turns, start };
}

function Chat({ api, config, chat }) {
  const { session, setSession, turns } = chat;
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  const send = async () => {
    const message = text.trim();
    if (!message) return;
    setError(null);
    try {
      await chat.start('messages', { text: message }, message);
      setText('');
    } catch (e) {
      setError(e.message);
    }
  };
  return html`<main>
    <div class="row"><label class="muted" for="session">Session</label><input id="session" value=${session} onInput=${(e) => setSession(e.currentTarget.value)} style="max-width: 14rem" /></div>
    ${turns.map((t) => html`<${Turn} key=${t.turnId} turn=${t} api=${api} config=${config} />`)}
    ${error && html`<p class="error">${error}</p>`}
    <div class="card row">
      <input id="message" placeholder="Ask something…" value=${text} onInput=${(e) => setText(e.currentTarget.value)} onKeyDown=${(e) => e.key === 'Enter' && send()} />
      <button class="primary" id="send" onClick=${send}>Send</button>
    </div>
  </main>`;
}

function usePolled(api, route, everyMs) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(() => api('GET', route).then((d) => (setData(d), setError(null)), (e) => setError(e.message)), [api, route]);
  useEffect(() => {
    load();
    const timer = setInterval(load, everyMs);
    return () => clearInterval(timer);
  }, [load, everyMs]);
  return { data, error, reload: load };
}

function Approvals({ api }) {
  const { data, error, reload } = usePolled(api, '/v1/approvals', 2000);
  const decide = (a, approve) => api('POST', a.decideUrl, { approve }).then(reload, (e) => alert(e.message));
  return html`<main>
    <h2>Approvals</h2>
    ${error && html`<p class="error">${error}</p>`}
    ${data && data.approvals.length === 0 && html`<p class="muted">Nothing waits for you.</p>`}
    ${data?.approvals.map(
      (a) => html`<div class="card approval inbox-item" data-approval=${a.toolCallId}>
        <div><strong>${a.name}</strong> for <strong>${a.owner}</strong> <span class="muted">(turn ${a.turnId}, until ${new Date(a.deadline).toLocaleTimeString()})</span></div>
        <pre>${JSON.stringify(a.arguments, null, 2)}</pre>
        <div class="row"><button class="ok" onClick=${() => decide(a, true)}>Approve</button><button class="bad" onClick=${() => decide(a, false)}>Deny</button></div>
      </div>`,
    )}
  </main>`;
}

function Servers({ api }) {
  const { data, error } = usePolled(api, '/v1/servers', 5000);
  return html`<main>
    <h2>MCP servers</h2>
    ${error && html`<p class="error">${error}</p>`}
    <table>
      <thead><tr><th>server</th><th>transport</th><th>state</th><th>tools</th><th>circuit</th></tr></thead>
      <tbody>
        ${data?.servers.map(
          (s) => html`<tr data-server=${s.server}>
            <td>${s.server}</td><td>${s.transport}</td>
            <td class=${`state-${s.state}`}>
              ${s.state}${s.error ? html`<div class="muted">${s.error}</div>` : ''}
              ${s.authorizationUrl && html`<div><a href=${s.authorizationUrl} target="_blank" rel="noopener noreferrer">Authorize the host's listing</a></div>`}
            </td>
            <td>${s.toolCount}</td>
            <td>${s.circuit ? `${s.circuit.state} (${s.circuit.consecutiveFailures} failures)` : '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </main>`;
}

/** A field per simple property of the tool's input schema; anything else is edited as JSON. */
function fieldsOf(schema) {
  const props = schema && schema.type === 'object' && schema.properties ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.entries(props).map(([name, p]) => {
    const kind = Array.isArray(p.enum) ? 'enum' : ['string', 'number', 'integer', 'boolean'].includes(p.type) ? p.type : 'json';
    return { name, kind, options: p.enum, required: required.has(name), description: p.description, fallback: p.default };
  });
}

/** The arguments the form's values make, or an error naming the field. */
function argumentsOf(fields, values) {
  const args = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') {
      if (v !== undefined) args[f.name] = v;
      continue;
    }
    if (v === undefined || v === '') continue;
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(v);
      if (!Number.isFinite(n)) return { error: `${f.name}: not a number` };
      args[f.name] = n;
    } else if (f.kind === 'json') {
      try {
        args[f.name] = JSON.parse(v);
      } catch {
        return { error: `${f.name}: not valid JSON` };
      }
    } else {
      args[f.name] = v;
    }
  }
  return { args };
}

/** Runs the tool through a turn of the chat's session (policy, approval and audit apply), then shows the chat. */
/** One input per field of a JSON Schema object (fieldsOf): for tool arguments and for answers to a server's question. */
function SchemaFields({ fields, set }) {
  return fields.map(
    (f) => html`<label class="field">
      <span>${f.name}${f.required ? ' *' : ''} <span class="muted">${f.kind}${f.description ? ` — ${f.description}` : ''}</span></span>
      ${f.kind === 'enum'
        ? html`<select name=${f.name} onChange=${(e) => set(f.name, e.currentTarget.value)}><option value=""></option>${f.options.map((o) => html`<option value=${o}>${o}</option>`)}</select>`
        : f.kind === 'boolean'
          ? html`<input type="checkbox" name=${f.name} onChange=${(e) => set(f.name, e.currentTarget.checked)} />`
          : f.kind === 'json'
            ? html`<textarea name=${f.name} rows="3" placeholder="JSON" onInput=${(e) => set(f.name, e.currentTarget.value)}></textarea>`
            : html`<input type=${f.kind === 'string' ? 'text' : 'number'} name=${f.name} onInput=${(e) => set(f.name, e.currentTarget.value)} />`}
    </label>`,
  );
}

/**
 * A server's question during a tool call, answered by the turn's owner: the form its schema asks for,
 * a page to open (URL mode: Open goes there and accepts), or leave to use the model (sampling).
 */
function Question({ q, turnId, api }) {
  const fields = fieldsOf(q.schema);
  const [values, setValues] = useState({});
  const [error, setError] = useState(null);
  const set = (name, v) => setValues((vs) => ({ ...vs, [name]: v }));
  const answer = async (action) => {
    let body = { action };
    if (action === 'accept') {
      // Fields left empty are left out: the server's defaults apply to them.
      const built = argumentsOf(fields, values);
      if (built.error) return setError(built.error);
      body = { action, content: built.args };
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
  return html`<form class="approval try" data-question=${q.toolCallId} onSubmit=${(e) => (e.preventDefault(), answer('accept'))}>
    <div><strong>${q.server}</strong> asks: ${q.message}</div>
    <${SchemaFields} fields=${fields} set=${set} />
    ${error && html`<p class="error">${error}</p>`}
    ${buttons('Send')}
  </form>`;
}

function TryTool({ tool, chat, onStarted }) {
  const fields = fieldsOf(tool.inputSchema);
  const [values, setValues] = useState({});
  const [error, setError] = useState(null);
  const set = (name, v) => setValues((vs) => ({ ...vs, [name]: v }));
  const run = async () => {
    const built = argumentsOf(fields, values);
    if (built.error) return setError(built.error);
    setError(null);
    try {
      await chat.start('tool-calls', { server: tool.server, tool: tool.tool, arguments: built.args }, `Run ${tool.server}/${tool.tool} ${JSON.stringify(built.args)}`);
      onStarted();
    } catch (e) {
      setError(e.message);
    }
  };
  return html`<form class="try" data-try=${tool.name} onSubmit=${(e) => (e.preventDefault(), run())}>
    <${SchemaFields} fields=${fields} set=${set} />
    ${fields.length === 0 && html`<p class="muted">No arguments.</p>`}
    ${error && html`<p class="error">${error}</p>`}
    <button class="primary" type="submit">Run in session ${chat.session}</button>
  </form>`;
}

function Tools({ api, chat, showChat }) {
  const { data, error } = usePolled(api, '/v1/tools', 30000);
  return html`<main>
    <h2>Tools your model is offered</h2>
    <p class="muted">"Run" calls the tool through a turn of the chat's session, without the model: the policy, approvals and the audit log apply as for a call the model makes.</p>
    ${error && html`<p class="error">${error}</p>`}
    ${data?.tools.map(
      (t) => html`<details class="card catalog-tool" data-tool=${t.name}>
        <summary><strong>${t.name}</strong> <span class="muted">${t.description ?? ''}</span></summary>
        <${TryTool} tool=${t} chat=${chat} onStarted=${showChat} />
        <details><summary class="muted">input schema</summary><pre>${JSON.stringify(t.inputSchema, null, 2)}</pre></details>
      </details>`,
    )}
  </main>`;
}

function App() {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY));
  const [reason, setReason] = useState(null);
  const [tab, setTab] = useState('chat');
  const [config, setConfig] = useState({});
  useEffect(() => {
    fetch('/console/config.json').then((r) => r.json()).then(setConfig, () => undefined);
  }, []);
  // With payload encryption, an operator's sign-in also lets the Temporal UI read decoded payloads
  // through the API's codec server (an HttpOnly cookie for /v1/codec; 403 or 404 otherwise, ignored).
  useEffect(() => {
    if (token) fetch('/v1/codec/session', { method: 'POST', headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
  }, [token]);
  const signOut = useCallback((why) => {
    const old = sessionStorage.getItem(TOKEN_KEY);
    if (old) fetch('/v1/codec/session', { method: 'DELETE', headers: { authorization: `Bearer ${old}` } }).catch(() => undefined);
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(null);
    setReason(typeof why === 'string' ? why : null);
  }, []);
  const api = useApi(token, signOut);
  const chat = useChat(api, token);
  if (!token) {
    return html`<${SignIn} reason=${reason} onToken=${(t) => (sessionStorage.setItem(TOKEN_KEY, t), setToken(t), setReason(null))} />`;
  }
  const who = claimsOf(token);
  const tabs = { chat: 'Chat', approvals: 'Approvals', servers: 'Servers', tools: 'Tools' };
  return html`
    <header>
      <h1>Durable MCP host</h1>
      <nav>
        ${Object.entries(tabs).map(([key, label]) => html`<button id=${`tab-${key}`} class=${tab === key ? 'active' : ''} onClick=${() => setTab(key)}>${label}</button>`)}
        <a href="/docs" target="_blank" rel="noreferrer"><button>API docs</button></a>
      </nav>
      <span class="who">${who.sub ?? '?'} (${who.role ?? '?'}, ${who.tenant_id ?? '?'})</span>
      <button class="plain" onClick=${() => signOut()}>Sign out</button>
    </header>
    <div style=${tab === 'chat' ? '' : 'display: none'}><${Chat} api=${api} config=${config} chat=${chat} /></div>
    ${tab === 'approvals' && html`<${Approvals} api=${api} />`}
    ${tab === 'servers' && html`<${Servers} api=${api} />`}
    ${tab === 'tools' && html`<${Tools} api=${api} chat=${chat} showChat=${() => setTab('chat')} />`}
  `;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" placeholder
render(html`<${App} />`, root);
