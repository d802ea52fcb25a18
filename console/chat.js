// The chat: the session named in the URL (`#session=<id>`), its transcript read back from the API, the
// turns still running or queued followed live (so a reload, a second tab or another device finds them
// with their pending approvals and questions), and the caller's sessions to switch between.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html, timeOf } from './lib.js';
import { Markdown } from './markdown.js';
import { Sessions } from './sessions.js';
import { followTurn, newTurn, Turn } from './turn.js';

const SESSION_ID = /^[a-zA-Z0-9_-]{1,64}$/;
/** How often an open chat reads its session again: turns another tab or device sent show up. */
const REFRESH_MS = 2000;
const HIDDEN_REFRESH_MS = 15_000;
/** How long a message is sent again while the API answers 503 or not at all. */
const SEND_FOR_MS = 30_000;

export function sessionInUrl() {
  const id = new URLSearchParams(location.hash.slice(1)).get('session');
  return id && SESSION_ID.test(id) ? id : null;
}
const newSessionId = () => `s-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/** The chat's state, shared by the chat and the tools tab (a tool tried there runs as a turn of the chat's session). */
export function useChat(api, token) {
  const [session, setSessionState] = useState(() => sessionInUrl() ?? newSessionId());
  const [transcript, setTranscript] = useState([]);
  const [title, setTitle] = useState(null);
  const [turns, setTurns] = useState([]);
  const followed = useRef(new Map());
  const current = useRef(session);

  const stopAll = () => {
    for (const stop of followed.current.values()) stop();
    followed.current = new Map();
  };
  useEffect(() => () => stopAll(), []);

  /** Follows a turn of the session (once), its card built from its stream. */
  const follow = useCallback(
    (turnId, userText) => {
      if (followed.current.has(turnId)) return;
      setTurns((ts) => [...ts, newTurn(turnId, userText)]);
      const mine = current.current;
      const update = (fn) => current.current === mine && setTurns((ts) => ts.map((t) => (t.turnId === turnId ? fn(t) : t)));
      followed.current.set(turnId, followTurn(turnId, token, update));
    },
    [token],
  );

  /** Reads the session again: its transcript, and the turns running or queued, followed if new. */
  const refresh = useCallback(async () => {
    const id = current.current;
    let view;
    try {
      view = await api('GET', `/v1/sessions/${encodeURIComponent(id)}/messages`);
    } catch (e) {
      if (e.status === 404) return; // a session without a message yet
      throw e;
    }
    if (current.current !== id) return;
    setTranscript(view.messages);
    setTitle(view.title ?? null);
    for (const turnId of [view.activeTurnId, ...view.queuedTurnIds].filter(Boolean)) {
      const asked = view.messages.find((m) => m.turnId === turnId && m.role === 'user');
      follow(turnId, asked?.content ?? '');
    }
  }, [api, follow]);

  useEffect(() => {
    current.current = session;
    if (sessionInUrl() !== session) history.replaceState(null, '', `#session=${encodeURIComponent(session)}`);
    stopAll();
    setTurns([]);
    setTranscript([]);
    setTitle(null);
    if (!token) return undefined;
    refresh().catch(() => undefined);
    // Read often while the tab is shown, seldom while hidden; a tab shown again reads at once
    // (another tab may have moved on).
    const visible = () => document.visibilityState === 'visible';
    let last = Date.now();
    const read = () => ((last = Date.now()), refresh().catch(() => undefined));
    const timer = setInterval(() => (visible() || Date.now() - last >= HIDDEN_REFRESH_MS) && read(), REFRESH_MS);
    const onShow = () => visible() && read();
    document.addEventListener('visibilitychange', onShow);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onShow);
    };
  }, [session, refresh, token]);

  // Back and forward, or a link to another session: the URL decides.
  useEffect(() => {
    const onHash = () => {
      const id = sessionInUrl();
      if (id && id !== current.current) setSessionState(id);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const setSession = (id) => {
    if (id === current.current) return;
    history.pushState(null, '', `#session=${encodeURIComponent(id)}`);
    setSessionState(id);
  };

  /**
   * Posts to one of the session's routes and follows the turn it starts. Under an Idempotency-Key of
   * its own, sent again with it after a 503 or a lost connection for up to SEND_FOR_MS: the first
   * attempt may have started the turn, and the same key names that turn instead of starting a second.
   */
  const start = useCallback(
    async (route, body, userText) => {
      // getRandomValues, not randomUUID: the console may be served over plain HTTP on a private network.
      const key = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
      const until = Date.now() + SEND_FOR_MS;
      for (;;) {
        try {
          const accepted = await api('POST', `/v1/sessions/${encodeURIComponent(current.current)}/${route}`, body, { 'idempotency-key': key });
          follow(accepted.turnId, userText);
          return accepted;
        } catch (e) {
          const again = e.status === 503 || e.status === undefined;
          if (!again || Date.now() > until) throw e;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    },
    [api, follow],
  );
  const reload = () => refresh().catch(() => undefined);
  return { session, title, setSession, newSession: () => setSession(newSessionId()), reload, transcript, turns, start };
}

/**
 * The conversation in order: transcript messages of turns this page does not follow, and a live card
 * for each followed turn where its messages are (or at the end, before the transcript has it).
 */
function entriesOf(transcript, turns) {
  const live = new Map(turns.map((t) => [t.turnId, t]));
  const shown = new Set();
  const entries = [];
  for (const m of transcript) {
    const turn = live.get(m.turnId);
    if (!turn) entries.push({ key: `${m.index}`, message: m });
    else if (!shown.has(m.turnId)) {
      shown.add(m.turnId);
      entries.push({ key: m.turnId, turn });
    }
  }
  for (const t of turns) if (!shown.has(t.turnId)) entries.push({ key: t.turnId, turn: t });
  return entries;
}

function Message({ m }) {
  return html`<div class=${`msg ${m.role} past`} data-turn=${m.turnId} data-index=${m.index}>
    <div class="role">${m.role === 'user' ? 'you' : 'assistant'} <span class="muted">${timeOf(m.at)}${m.status !== 'completed' && m.role === 'assistant' ? ` · ${m.status}` : ''}</span></div>
    ${m.role === 'user' ? html`<div class="text">${m.content}</div>` : html`<${Markdown} className="answer" text=${m.content} />`}
  </div>`;
}

/** What the model answers (GET /v1/suggestions: the demo model's examples, none for a real model), offered in an empty chat. */
function Suggestions({ api, onPick }) {
  const [suggestions, setSuggestions] = useState([]);
  useEffect(() => {
    api('GET', '/v1/suggestions').then((d) => setSuggestions(d.suggestions), () => setSuggestions([]));
  }, [api]);
  if (suggestions.length === 0) return null;
  return html`<div class="suggestions">
    <p class="muted">The model understands these; click one to send it:</p>
    ${suggestions.map((s) => html`<button class="plain suggestion" onClick=${() => onPick(s)}>${s}</button>`)}
  </div>`;
}

export function Chat({ api, config, chat }) {
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  const send = async (picked) => {
    const message = (picked ?? text).trim();
    if (!message) return;
    setError(null);
    try {
      await chat.start('messages', { text: message }, message);
      setText('');
    } catch (e) {
      setError(e.message);
    }
  };
  const entries = entriesOf(chat.transcript, chat.turns);
  return html`<div class="chat-layout">
    <${Sessions} api=${api} chat=${chat} />
    <main>
      <div class="row muted">${chat.title && html`<strong id="session-title">${chat.title}</strong>`} Session <code id="session">${chat.session}</code></div>
      ${entries.length === 0 && html`<${Suggestions} api=${api} onPick=${send} />`}
      ${entries.map((e) =>
        e.turn ? html`<${Turn} key=${e.key} turn=${e.turn} api=${api} config=${config} />` : html`<${Message} key=${e.key} m=${e.message} />`,
      )}
      ${error && html`<p class="error">${error}</p>`}
      <div class="card row">
        <input id="message" placeholder="Ask something…" value=${text} onInput=${(e) => setText(e.currentTarget.value)} onKeyDown=${(e) => e.key === 'Enter' && send()} />
        <button class="primary" id="send" onClick=${() => send()}>Send</button>
      </div>
    </main>
  </div>`;
}
