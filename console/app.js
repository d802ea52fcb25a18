// The console: a browser client of the public API only (the same routes as any frontend), built with
// Preact hooks and htm tagged templates, no build step. Tabs: chat (live text, tool-call cards, inline
// approvals, cancel, a link to each turn in the Temporal UI), approvals inbox, servers, tools.
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
  on('status', (d) => d.phase === 'calling_llm' && ((live = ''), update((t) => ({ ...t, live: '' }))));
  on('text_delta', (d) => {
    live = live.slice(0, d.offset) + d.text;
    update((t) => ({ ...t, live }));
  });
  on('text_reset', () => ((live = ''), update((t) => ({ ...t, live: '' }))));
  on('tool_call_started', (d) => update((t) => ({ ...t, tools: [...t.tools, { id: d.toolCallId, name: d.name, args: d.arguments, state: 'running' }] })));
  on('tool_call_finished', (d) =>
    update((t) => ({ ...t, tools: t.tools.map((c) => (c.id === d.toolCallId ? { ...c, state: d.isError ? 'failed' : 'completed', result: d.message ?? d.result } : c)) })),
  );
  on('notice', (d) => update((t) => ({ ...t, notices: [...t.notices, d.message] })));
  on('approval_required', (d) => update((t) => ({ ...t, approvals: [...t.approvals, { toolCallId: d.toolCallId, name: d.name, args: d.arguments, decision: null }] })));
  on('approval_decided', (d) => update((t) => ({ ...t, approvals: t.approvals.map((a) => (a.toolCallId === d.toolCallId ? { ...a, decision: d.decision } : a)) })));
  on('text', (d) => update((t) => ({ ...t, text: d.text })));
  on('done', () => end({ status: 'completed' }));
  on('error', (d) => (d && d.message ? end({ status: 'failed', error: d.message }) : undefined));
  on('cancelled', () => end({ status: 'cancelled' }));
  return () => source.close();
}

function ToolCard({ call }) {
  return html`<div class=${`tool ${call.state}`} data-tool=${call.name}>
    <strong>${call.name}</strong> <span class="muted">${call.state}</span>
    <div><code>${JSON.stringify(call.args ?? {})}</code></div>
    ${call.result && html`<details><summary>result</summary><pre>${String(call.result)}</pre></details>`}
  </div>`;
}

function Turn({ turn, api, config }) {
  const decide = (toolCallId, approve) => api('POST', `/v1/turns/${turn.turnId}/approvals/${toolCallId}`, { approve }).catch((e) => alert(e.message));
  const link = config.temporalUiUrl && `${config.temporalUiUrl}/namespaces/${config.namespace}/workflows/${encodeURIComponent(turn.turnId)}`;
  return html`<div class="card turn" data-turn=${turn.turnId} data-status=${turn.status}>
    <div class="msg user"><div class="role">you</div><div class="text">${turn.userText}</div></div>
    ${turn.notices.map((n) => html`<div class="notice">${n}</div>`)}
    ${turn.tools.map((c) => html`<${ToolCard} call=${c} />`)}
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
    <div class="row muted">
      <span class="status">${turn.running ? 'running…' : turn.status}</span>
      ${turn.running && html`<button class="plain" onClick=${() => api('POST', `/v1/turns/${turn.turnId}/cancel`).catch((e) => alert(e.message))}>Cancel</button>`}
      ${link && html`<a href=${link} target="_blank" rel="noreferrer">Temporal UI</a>`}
    </div>
  </div>`;
}

function Chat({ api, token, config }) {
  const [session, setSession] = useState('console');
  const [text, setText] = useState('');
  const [turns, setTurns] = useState([]);
  const [error, setError] = useState(null);
  const stops = useRef([]);
  useEffect(() => () => stops.current.forEach((s) => s()), []);
  const send = async () => {
    const message = text.trim();
    if (!message) return;
    setError(null);
    try {
      const accepted = await api('POST', `/v1/sessions/${encodeURIComponent(session)}/messages`, { text: message });
      setText('');
      const turn = { turnId: accepted.turnId, userText: message, tools: [], approvals: [], notices: [], running: true, status: 'running', live: '' };
      setTurns((ts) => [...ts, turn]);
      const update = (fn) => setTurns((ts) => ts.map((t) => (t.turnId === turn.turnId ? fn(t) : t)));
      stops.current.push(followTurn(turn.turnId, token, update));
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
            <td class=${`state-${s.state}`}>${s.state}${s.error ? html`<div class="muted">${s.error}</div>` : ''}</td>
            <td>${s.toolCount}</td>
            <td>${s.circuit ? `${s.circuit.state} (${s.circuit.consecutiveFailures} failures)` : '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </main>`;
}

function Tools({ api }) {
  const { data, error } = usePolled(api, '/v1/tools', 30000);
  return html`<main>
    <h2>Tools your model is offered</h2>
    ${error && html`<p class="error">${error}</p>`}
    ${data?.tools.map(
      (t) => html`<details class="card catalog-tool" data-tool=${t.name}>
        <summary><strong>${t.name}</strong> <span class="muted">${t.description ?? ''}</span></summary>
        <pre>${JSON.stringify(t.inputSchema, null, 2)}</pre>
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
  const signOut = useCallback((why) => {
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(null);
    setReason(typeof why === 'string' ? why : null);
  }, []);
  const api = useApi(token, signOut);
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
    <div style=${tab === 'chat' ? '' : 'display: none'}><${Chat} api=${api} token=${token} config=${config} /></div>
    ${tab === 'approvals' && html`<${Approvals} api=${api} />`}
    ${tab === 'servers' && html`<${Servers} api=${api} />`}
    ${tab === 'tools' && html`<${Tools} api=${api} />`}
  `;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" placeholder
render(html`<${App} />`, root);
