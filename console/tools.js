// The tools page: the tools the caller's model is offered, searchable, grouped by server, each with
// badges from the policy (needs approval) and the server's annotations (read-only, destructive), its
// input schema folded, and a form that runs it through a turn of the chat's session.
import { useState } from 'preact/hooks';
import { html, usePolled } from './lib.js';
import { useSchemaForm } from './question.js';
import { SchemaFields } from './schema-form.js';

/** What a tool's card says of it: the policy's word first, then the server's own hints. */
export function toolBadges(t) {
  const a = t.annotations ?? {};
  return [
    t.needsApproval && { kind: 'needs-approval', label: 'needs approval', why: 'The policy asks a person to approve each call.' },
    a.readOnlyHint === true && { kind: 'read-only', label: 'read-only', why: 'The server says this tool changes nothing.' },
    a.readOnlyHint !== true && a.destructiveHint === true && { kind: 'destructive', label: 'destructive', why: 'The server says this tool may delete or overwrite.' },
  ].filter(Boolean);
}

/** Does the tool match every word of the search (name, title, description, server)? */
export function toolMatches(t, query) {
  const hay = [t.name, t.annotations?.title, t.description, t.server].filter(Boolean).join(' ').toLowerCase();
  return query.toLowerCase().split(/\s+/).filter(Boolean).every((word) => hay.includes(word));
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

function ToolCard({ tool: t, chat, showChat }) {
  return html`<details class="card catalog-tool" data-tool=${t.name}>
    <summary>
      <strong>${t.tool}</strong>${t.annotations?.title && html` <span>${t.annotations.title}</span>`}
      ${toolBadges(t).map((b) => html` <span class=${`badge ${b.kind}`} title=${b.why}>${b.label}</span>`)}
      <div class="muted">${t.description ?? ''}</div>
    </summary>
    <${TryTool} tool=${t} chat=${chat} onStarted=${showChat} />
    <details class="schema"><summary class="muted">input schema</summary><pre>${JSON.stringify(t.inputSchema, null, 2)}</pre></details>
  </details>`;
}

export function Tools({ api, chat, showChat }) {
  const { data, error } = usePolled(api, '/v1/tools', 30000);
  const [query, setQuery] = useState('');
  const shown = (data?.tools ?? []).filter((t) => toolMatches(t, query));
  // Every server with a tool shown, in the catalog's order of servers (then any the list lacks).
  const servers = [...new Set([...(data?.servers ?? []).map((s) => s.server), ...shown.map((t) => t.server)])];
  const stateOf = (server) => data?.servers.find((s) => s.server === server)?.state;
  return html`<main>
    <h2>Tools your model is offered</h2>
    <p class="muted">"Run" calls the tool through a turn of the chat's session, without the model: the policy, approvals and the audit log apply as for a call the model makes.</p>
    <input id="tool-search" type="search" placeholder="Search tools by name, description or server" value=${query} onInput=${(e) => setQuery(e.currentTarget.value)} />
    ${error && html`<p class="error">${error}</p>`}
    ${data && shown.length === 0 && html`<p class="muted">No tool matches.</p>`}
    ${servers.map((server) => {
      const tools = shown.filter((t) => t.server === server);
      if (tools.length === 0) return null;
      return html`<section class="tool-group" data-server=${server}>
        <h3>${server} <span class=${`state-${stateOf(server)}`}>${stateOf(server) ?? ''}</span> <span class="muted">${tools.length} tool${tools.length === 1 ? '' : 's'}</span></h3>
        ${tools.map((t) => html`<${ToolCard} key=${t.name} tool=${t} chat=${chat} showChat=${showChat} />`)}
      </section>`;
    })}
  </main>`;
}
