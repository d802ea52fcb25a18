// Debugging a turn and the servers: a turn's MCP messages (GET /v1/turns/:id/mcp: the tools/call
// requests, their results, the servers' questions, redacted as in the audit log), read
// when unfolded; and a manual reconnect of a server that is down (POST /v1/servers/:server/reconnect).
import { useState } from 'preact/hooks';
import { html, timeOf } from './lib.js';

const ARROWS = { host_to_server: 'host → ', server_to_host: '← ' };

export function McpMessages({ api, turnId }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = () =>
    api('GET', `/v1/turns/${encodeURIComponent(turnId)}/mcp`).then(
      (d) => (setData(d), setError(null)),
      (e) => setError(e.message),
    );
  // Read each time it is unfolded: a running turn gains messages.
  const onToggle = (e) => e.currentTarget.open && load();
  return html`<details class="mcp-messages" onToggle=${onToggle}>
    <summary class="muted">MCP messages</summary>
    ${error && html`<p class="error">${error}</p>`}
    ${data && data.messages.length === 0 && html`<p class="muted">This turn exchanged no MCP message.</p>`}
    ${data?.messages.map(
      (m) => html`<div class="mcp-message" data-direction=${m.direction} data-tool-call=${m.toolCallId}>
        <div class="muted">${m.at ? timeOf(m.at) : ''} ${ARROWS[m.direction]}<strong>${m.server}</strong>${m.direction === 'server_to_host' ? ' → host' : ''}</div>
        <pre>${JSON.stringify(m.message, null, 2)}</pre>
      </div>`,
    )}
    ${data && html`<p class="muted">Rebuilt from the turn's record, redacted as in the audit log; results as the model saw them.</p>`}
  </details>`;
}

/** "Reconnect" for a server that is not connected: a worker lists it again now, and the row shows what it found. */
export function Reconnect({ api, server, onDone }) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState(null);
  const run = async () => {
    setBusy(true);
    try {
      const status = await api('POST', `/v1/servers/${encodeURIComponent(server)}/reconnect`);
      setOutcome(status.state === 'connected' ? 'connected again' : `still ${status.state}${status.error ? `: ${status.error}` : ''}`);
      onDone();
    } catch (e) {
      setOutcome(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="reconnect">
    <button class="plain" disabled=${busy} onClick=${run}>${busy ? 'Reconnecting…' : 'Reconnect'}</button>
    ${outcome && html` <span class="muted outcome">${outcome}</span>`}
  </div>`;
}
