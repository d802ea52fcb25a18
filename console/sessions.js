// The caller's sessions, newest first, each with its title (or its id until it has one) and its last
// message: click one to open it; rename it or delete it in place (PATCH and DELETE /v1/sessions/:id).
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from './lib.js';

/** As the API checks it (SessionTitleBody): trimmed, 1 to 200 characters. */
const TITLE_MAX = 200;
/** Sessions per page of the list (More… reads the next). */
const PAGE = 20;
const sessionUrl = (id) => `/v1/sessions/${encodeURIComponent(id)}`;

/** One listed session: opens it; renames it (a form in place) or deletes it (after a confirmation in place). */
function SessionItem({ s, current, api, onOpen, onChanged, onDeleted }) {
  const [mode, setMode] = useState(null); // null, 'rename' or 'delete'
  const [title, setTitle] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const act = async (work) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      setMode(null);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  const rename = (e) => {
    e.preventDefault();
    if (title.trim()) act(async () => (await api('PATCH', sessionUrl(s.sessionId), { title: title.trim() }), onChanged()));
  };
  const remove = () => act(async () => (await api('DELETE', sessionUrl(s.sessionId)), onDeleted(s.sessionId)));
  const cancel = () => (setMode(null), setError(null));
  return html`<div class="session-item" data-session=${s.sessionId}>
    <button class=${`session${current ? ' current' : ''}`} data-session=${s.sessionId} title=${s.sessionId} onClick=${onOpen}>
      <strong class="name">${s.title ?? s.sessionId}</strong>
      ${s.lastMessage ? html`<div class="preview">${s.lastMessage.preview}</div><div class="muted">${new Date(s.lastMessage.at).toLocaleString()}</div>` : html`<div class="muted">started ${new Date(s.startedAt).toLocaleString()}</div>`}
    </button>
    ${mode === null &&
    html`<div class="session-actions">
      <button class="link rename" onClick=${() => (setTitle(s.title ?? ''), setMode('rename'))}>Rename</button>
      <button class="link delete" onClick=${() => setMode('delete')}>Delete</button>
    </div>`}
    ${mode === 'rename' &&
    html`<form class="rename-form" onSubmit=${rename}>
      <input class="title-input" aria-label="Session title" maxlength=${TITLE_MAX} value=${title} ref=${(el) => el?.focus()}
        onInput=${(e) => setTitle(e.currentTarget.value)} onKeyDown=${(e) => e.key === 'Escape' && cancel()} />
      <div class="row">
        <button class="primary" type="submit" disabled=${busy || !title.trim()}>Save</button>
        <button class="plain" type="button" onClick=${cancel}>Cancel</button>
      </div>
    </form>`}
    ${mode === 'delete' &&
    html`<div class="confirm-delete">
      <span>Delete this session? It leaves your list; its turns stay in the workflow history.</span>
      <div class="row">
        <button class="bad" disabled=${busy} onClick=${remove}>Delete</button>
        <button class="plain" onClick=${cancel}>Cancel</button>
      </div>
    </div>`}
    ${error && html`<p class="error">${error}</p>`}
  </div>`;
}

/** The list beside the chat; `chat` is useChat's state (the session open, switching, a new one). */
export function Sessions({ api, chat }) {
  const [list, setList] = useState(null);
  const [more, setMore] = useState(null);
  const shown = useRef(0);
  shown.current = list?.length ?? 0;
  const page = useCallback(
    (cursor) => api('GET', `/v1/sessions?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
    [api],
  );
  // Read again as many as are shown (at least a page), page by page: a refresh keeps the pages loaded with More….
  const load = useCallback(async () => {
    const sessions = [];
    let cursor = null;
    do {
      const next = await page(cursor);
      sessions.push(...next.sessions);
      cursor = next.nextCursor ?? null;
    } while (cursor && sessions.length < Math.max(PAGE, shown.current));
    setList(sessions);
    setMore(cursor);
  }, [page]);
  const loadMore = (cursor) =>
    page(cursor).then(
      (next) => (setList((l) => [...(l ?? []), ...next.sessions]), setMore(next.nextCursor ?? null)),
      () => undefined,
    );
  useEffect(() => {
    const read = () => load().catch(() => undefined);
    const refresh = () => document.visibilityState === 'visible' && read();
    read();
    // Every 10 s while the tab is shown, and at once when it is shown again.
    const timer = setInterval(refresh, 10_000);
    document.addEventListener('visibilitychange', refresh);
    return () => (clearInterval(timer), document.removeEventListener('visibilitychange', refresh));
  }, [load, chat.session, chat.turns.length]);
  const deleted = (id) => {
    setList((l) => (l ?? []).filter((s) => s.sessionId !== id));
    // The open session is gone: a new one takes its place.
    if (id === chat.session) chat.newSession();
    load().catch(() => undefined);
  };
  const here = list?.some((s) => s.sessionId === chat.session);
  return html`<aside class="sessions">
    <button class="primary" id="new-session" onClick=${chat.newSession}>New session</button>
    ${!here && html`<div class="session current" data-session=${chat.session}><strong>${chat.session}</strong><div class="muted">new</div></div>`}
    ${(list ?? []).map(
      (s) => html`<${SessionItem} key=${s.sessionId} s=${s} current=${s.sessionId === chat.session} api=${api}
        onOpen=${() => chat.setSession(s.sessionId)} onChanged=${() => (load().catch(() => undefined), chat.reload())} onDeleted=${deleted} />`,
    )}
    ${more && html`<button class="plain more" onClick=${() => loadMore(more)}>More…</button>`}
  </aside>`;
}
