// One turn in the chat: its SSE stream followed into state, and its card (the message, live text,
// tool cards, approvals, questions, the answer as Markdown, the trace, cancel, the Temporal UI link).
import { useEffect, useState } from 'preact/hooks';
import { McpMessages } from './debug.js';
import { countdown, html, timeOf, useNow } from './lib.js';
import { Markdown, ResultView } from './markdown.js';
import { Question } from './question.js';

/** A turn's state before its first event. */
export const newTurn = (turnId, userText) => ({ turnId, userText, tools: [], approvals: [], notices: [], trace: [], running: true, status: 'running', live: '' });

const TRACED = ['status', 'tool_call_started', 'tool_call_finished', 'notice', 'approval_required', 'approval_decided', 'authorization_required', 'authorization_completed', 'input_required', 'input_provided', 'text', 'done', 'error', 'cancelled'];

/**
 * Follows one turn's SSE stream from its first event (EventSource cannot send headers: the token goes
 * as ?access_token). A turn opened after a reload or in a second tab replays every event, so its
 * pending approvals and questions are there, answerable, as in the tab that sent it.
 */
export function followTurn(turnId, token, update) {
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
  for (const type of TRACED) {
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
  on('approval_required', (d) =>
    update((t) => ({ ...t, approvals: [...t.approvals, { toolCallId: d.toolCallId, name: d.name, args: d.arguments, requestedAt: d.at, decision: null }] })),
  );
  on('approval_decided', (d) =>
    update((t) => ({ ...t, approvals: t.approvals.map((a) => (a.toolCallId === d.toolCallId ? { ...a, decision: d.decision, by: d.by, decidedAt: d.at } : a)) })),
  );
  // An OAuth server needs the user's consent: the turn waits until they come back from this link.
  on('authorization_required', (d) => update((t) => ({ ...t, authorizations: [...(t.authorizations ?? []), { toolCallId: d.toolCallId, server: d.server, url: d.authorizationUrl, outcome: null }] })));
  // A server asks the user something during a tool call: a form until the owner answers.
  on('input_required', (d) =>
    update((t) => ({ ...t, questions: [...(t.questions ?? []), { toolCallId: d.toolCallId, server: d.server, mode: d.mode ?? 'form', url: d.url, message: d.message, schema: d.requestedSchema, action: null, key: `${d.toolCallId}:${d.at}` }] })),
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
    ${call.result && html`<${ResultView} text=${call.result} />`}
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

/** The deadline of a pending call (from the turn's view: the events do not carry it), counting down. */
function Deadline({ deadline }) {
  const now = useNow(Boolean(deadline));
  if (!deadline) return null;
  return html`<span class="deadline" data-deadline=${deadline}>denied in <strong>${countdown(Date.parse(deadline) - now)}</strong> if nobody decides (at ${timeOf(deadline)})</span>`;
}

const DECISIONS = { approved: 'approved', rejected: 'denied', timed_out: 'denied: nobody decided in time' };

/** A call held for a decision: "awaiting approval" with its deadline, then who decided and when. */
export function ApprovalCard({ a, decide, deadline }) {
  return html`<div class="approval" data-approval=${a.toolCallId} data-decision=${a.decision ?? 'pending'}>
    <div><strong>${a.name}</strong> <code>${JSON.stringify(a.args ?? {})}</code></div>
    ${a.decision
      ? html`<div class="decided">${DECISIONS[a.decision] ?? a.decision}${a.by ? html` by <strong class="by">${a.by}</strong>` : ''}${a.decidedAt ? ` at ${timeOf(a.decidedAt)}` : ''}</div>`
      : html`<div><span class="badge awaiting">awaiting approval</span> <${Deadline} deadline=${deadline} /></div>
          <div class="row"><button class="ok" onClick=${() => decide(a.toolCallId, true)}>Approve</button><button class="bad" onClick=${() => decide(a.toolCallId, false)}>Deny</button></div>`}
  </div>`;
}

/** A queued turn's wait: the turn ahead, the decisions it waits for, and the way out. */
function Waiting({ waiting, api }) {
  const act = (route, body) => api('POST', route, body).catch((e) => alert(e.message));
  return html`<div class="waiting" data-waiting=${waiting.behind}>
    <div>Waits for the session's turn ahead, which ${waiting.status === 'awaiting_approval' ? 'waits for a decision' : 'is still running'}.</div>
    ${waiting.pendingApprovals.map(
      (a) => html`<div class="approval" data-approval=${a.toolCallId}>
        <strong>${a.name}</strong> <code>${JSON.stringify(a.arguments ?? {})}</code> <span class="muted">(denied at ${timeOf(a.deadline)} if nobody decides)</span>
        <div class="row"><button class="ok" onClick=${() => act(a.decideUrl, { approve: true })}>Approve</button><button class="bad" onClick=${() => act(a.decideUrl, { approve: false })}>Deny</button></div>
      </div>`,
    )}
    <button class="plain" onClick=${() => act(waiting.cancelUrl)}>Cancel the turn ahead</button>
  </div>`;
}

/** The deadlines of the turn's pending calls, asked of the turn's view whenever a call starts waiting. */
function useDeadlines(api, turn) {
  const [deadlines, setDeadlines] = useState({});
  const waiting = turn.approvals.filter((a) => !a.decision && !deadlines[a.toolCallId]).map((a) => a.toolCallId).join(',');
  useEffect(() => {
    if (!waiting) return;
    api('GET', `/v1/turns/${encodeURIComponent(turn.turnId)}`).then(
      (view) => setDeadlines((d) => ({ ...d, ...Object.fromEntries((view.pendingApprovals ?? []).map((p) => [p.toolCallId, p.deadline])) })),
      () => undefined,
    );
  }, [waiting]);
  return deadlines;
}

export function Turn({ turn, api, config }) {
  const decide = (toolCallId, approve) => api('POST', `/v1/turns/${turn.turnId}/approvals/${toolCallId}`, { approve }).catch((e) => alert(e.message));
  const deadlines = useDeadlines(api, turn);
  const link = config.temporalUiUrl && `${config.temporalUiUrl}/namespaces/${config.namespace}/workflows/${encodeURIComponent(turn.turnId)}`;
  return html`<div class="card turn" data-turn=${turn.turnId} data-status=${turn.status}>
    <div class="msg user"><div class="role">you</div><div class="text">${turn.userText}</div></div>
    ${turn.notices.map((n) => html`<div class="notice">${n}</div>`)}
    ${turn.running && turn.waiting && html`<${Waiting} waiting=${turn.waiting} api=${api} />`}
    ${turn.tools.map((c) => html`<${ToolCard} call=${c} />`)}
    ${(turn.questions ?? []).map((q) => html`<${Question} key=${q.key} q=${q} turnId=${turn.turnId} api=${api} />`)}
    ${(turn.authorizations ?? []).map(
      (a) => html`<div class="approval" data-authorization=${a.server}>
        ${a.outcome
          ? html`<span class="muted">${a.server}: ${a.outcome === 'authorized' ? 'authorized' : 'not authorized in time'}</span>`
          : html`<div><strong>${a.server}</strong> needs your permission to act for you.</div>
              <div class="row"><a class="button" href=${a.url} target="_blank" rel="noopener noreferrer">Authorize ${a.server}</a><span class="muted">The turn continues once you are back.</span></div>`}
      </div>`,
    )}
    ${turn.approvals.map((a) => html`<${ApprovalCard} a=${a} decide=${decide} deadline=${deadlines[a.toolCallId]} />`)}
    <div class="msg assistant"><div class="role">assistant</div><${Markdown} className="answer" text=${turn.text ?? turn.live ?? ''} /></div>
    ${turn.error && html`<div class="error">${turn.error}</div>`}
    <${Trace} turn=${turn} link=${link} />
    <${McpMessages} api=${api} turnId=${turn.turnId} />
    <div class="row muted">
      <span class="status">${turn.running ? 'running…' : turn.status}</span>
      ${turn.running && html`<button class="plain" onClick=${() => api('POST', `/v1/turns/${turn.turnId}/cancel`).catch((e) => alert(e.message))}>Cancel</button>`}
      ${link && html`<a href=${link} target="_blank" rel="noreferrer">Temporal UI</a>`}
    </div>
  </div>`;
}
