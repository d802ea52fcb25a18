// The pages beside the chat: the approvals inbox, the MCP servers, the tools (each with a form that
// runs it through a turn of the chat's session).
import { useState } from 'preact/hooks';
import { html, timeOf, usePolled } from './lib.js';
import { useSchemaForm } from './question.js';
import { SchemaFields } from './schema-form.js';

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

/** Runs the tool through a turn of the chat's session (policy, approval and audit apply), then shows the chat. */
function TryTool({ tool, chat, onStarted }) {
  const form = useSchemaForm(tool.inputSchema, { json: true });
  const [error, setError] = useState(null);
  const run = async () => {
    const args = form.submit();
    if (!args) return;
    setError(null);
    try {
      await chat.start('tool-calls', { server: tool.server, tool: tool.tool, arguments: args }, `Run ${tool.server}/${tool.tool} ${JSON.stringify(args)}`);
      onStarted();
    } catch (e) {
      setError(e.message);
    }
  };
  return html`<form class="try" data-try=${tool.name} noValidate onSubmit=${(e) => (e.preventDefault(), run())}>
    <${SchemaFields} fields=${form.fields} values=${form.values} set=${form.set} problems=${form.problems} />
    ${form.fields.length === 0 && html`<p class="muted">No arguments.</p>`}
    ${error && html`<p class="error">${error}</p>`}
    <button class="primary" type="submit">Run in session ${chat.session}</button>
  </form>`;
}

export function Tools({ api, chat, showChat }) {
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
