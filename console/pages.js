// The pages beside the chat: the approvals inbox and the MCP servers (the tools page: tools.js).
import { Reconnect } from './debug.js';
import { html, timeOf, usePolled } from './lib.js';

export function Approvals({ api }) {
  const { data, error, reload } = usePolled(api, '/v1/approvals', 2000);
  const decide = (a, approve) => api('POST', a.decideUrl, { approve }).then(reload, (e) => alert(e.message));
  return html`<main>
    <h2>Approvals</h2>
    ${error && html`<p class="error">${error}</p>`}
    ${data && data.approvals.length === 0 && html`<p class="muted">Nothing waits for you.</p>`}
    ${data?.approvals.map(
      (a) => html`<div class="card approval inbox-item" data-approval=${a.toolCallId}>
        <div><strong>${a.name}</strong> for <strong>${a.owner}</strong> <span class="muted">(turn ${a.turnId}, until ${timeOf(a.deadline)})</span></div>
        <pre>${JSON.stringify(a.arguments, null, 2)}</pre>
        <div class="row"><button class="ok" onClick=${() => decide(a, true)}>Approve</button><button class="bad" onClick=${() => decide(a, false)}>Deny</button></div>
      </div>`,
    )}
  </main>`;
}

export function Servers({ api }) {
  const { data, error, reload } = usePolled(api, '/v1/servers', 5000);
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
              ${s.state === 'unavailable' && html`<${Reconnect} api=${api} server=${s.server} onDone=${reload} />`}
            </td>
            <td>${s.toolCount}</td>
            <td>${s.circuit ? `${s.circuit.state} (${s.circuit.consecutiveFailures} failures)` : '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </main>`;
}
