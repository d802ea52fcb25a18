// The console: a browser client of the public API only (the same routes as any frontend), built with
// Preact hooks and htm tagged templates, no build step. Tabs: chat (the session in the URL, the
// caller's sessions to open, rename or delete, live text, tool-call cards, inline approvals and questions, answers as Markdown,
// each turn's trace and a link to it in the Temporal UI), approvals inbox, servers, tools (with a form
// to run one through a turn). One module per job: lib.js, chat.js, sessions.js, turn.js, question.js,
// schema-form.js, markdown.js, pages.js, tools.js.
import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { Chat, useChat } from './chat.js';
import { claimsOf, html, useApi } from './lib.js';
import { Approvals, Servers } from './pages.js';
import { Tools } from './tools.js';

// Also read by the API docs' script (src/api/openapi-doc/console-token.ts): keep the two the same.
const TOKEN_KEY = 'dmh.token';

/** The API docs in a window of their own that inherits this tab's sessionStorage: signed in with our token. */
const openDocs = () => window.open('/docs', '_blank');

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
        <button id="open-docs" onClick=${openDocs}>API docs</button>
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
