/**
 * A catalog of hundreds of tools (docs/decisions/0032): 12 stand-in MCP servers over Streamable HTTP,
 * 25 tools each (five verbs on five things), every call answering `<server>/<tool> ran with <args>`;
 * and a scripted model that searches with the user's words and calls the first tool found, if it was
 * offered. Shared by the 300-tool test and its bench row.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { LlmClient } from '../../src/llm/client';
import type { LlmRequest, LlmResponse, LlmToolSpec } from '../../src/shared/turn';
import { scriptedModel } from './scripted-model';
import { serveStatelessMcp, type StatelessMcpHttp } from './stateless-mcp-http';

const VERBS = ['create', 'get', 'list', 'update', 'delete'] as const;

/** Each server and the five things its tools handle (no thing appears twice, so a request names one tool). */
export const SERVERS: Record<string, readonly string[]> = {
  billing: ['invoice', 'refund', 'subscription', 'coupon', 'receipt'],
  crm: ['contact', 'lead', 'opportunity', 'account', 'deal'],
  hr: ['employee', 'payslip', 'vacation', 'review', 'benefit'],
  inventory: ['product', 'warehouse', 'stock', 'supplier', 'sku'],
  shipping: ['shipment', 'parcel', 'label', 'carrier', 'pickup'],
  support: ['ticket', 'macro', 'escalation', 'survey', 'article'],
  calendar: ['meeting', 'room', 'reminder', 'availability', 'holiday'],
  docs: ['document', 'folder', 'template', 'comment', 'signature'],
  analytics: ['dashboard', 'report', 'metric', 'funnel', 'cohort'],
  security: ['credential', 'certificate', 'firewall', 'incident', 'audit'],
  devops: ['deployment', 'pipeline', 'cluster', 'alert', 'rollback'],
  marketing: ['campaign', 'newsletter', 'audience', 'banner', 'webinar'],
};

export const TOOL_COUNT = Object.values(SERVERS).reduce((n, things) => n + things.length * VERBS.length, 0);

/** Twenty requests in plain words, each with the one tool that answers it. */
export const REQUESTS: ReadonlyArray<{ text: string; server: string; tool: string }> = [
  { text: 'Please create a refund for order 1042', server: 'billing', tool: 'create_refund' },
  { text: 'List every invoice that is still open', server: 'billing', tool: 'list_invoice' },
  { text: 'Update the lead from Acme with their new phone number', server: 'crm', tool: 'update_lead' },
  { text: 'Get the opportunity we discussed yesterday', server: 'crm', tool: 'get_opportunity' },
  { text: 'Delete the payslip that was issued twice', server: 'hr', tool: 'delete_payslip' },
  { text: 'Create a vacation request for next week', server: 'hr', tool: 'create_vacation' },
  { text: 'How much stock is there? Get it for item 7', server: 'inventory', tool: 'get_stock' },
  { text: 'List all suppliers in Europe', server: 'inventory', tool: 'list_supplier' },
  { text: 'Create a shipment to Berlin', server: 'shipping', tool: 'create_shipment' },
  { text: 'Update the parcel weight to 3 kg', server: 'shipping', tool: 'update_parcel' },
  { text: 'Escalation needed: create one for the outage', server: 'support', tool: 'create_escalation' },
  { text: 'Get the ticket the customer opened this morning', server: 'support', tool: 'get_ticket' },
  { text: 'Delete the meeting on Friday', server: 'calendar', tool: 'delete_meeting' },
  { text: 'List room bookings for tomorrow', server: 'calendar', tool: 'list_room' },
  { text: 'Update the signature on the contract', server: 'docs', tool: 'update_signature' },
  { text: 'Get the quarterly report', server: 'analytics', tool: 'get_report' },
  { text: 'List the cohorts that churned', server: 'analytics', tool: 'list_cohort' },
  { text: 'Create an incident for the phishing mail', server: 'security', tool: 'create_incident' },
  { text: 'Start a rollback: create it for release 5.2', server: 'devops', tool: 'create_rollback' },
  { text: 'Delete the old newsletter draft', server: 'marketing', tool: 'delete_newsletter' },
];

function title(verb: string, thing: string): string {
  return `${verb === 'list' ? 'Lists' : `${verb[0]?.toUpperCase()}${verb.slice(1)}s`} ${verb === 'list' ? `${thing}s` : `a ${thing}`}`;
}

export interface ManyServers {
  urls: Record<string, string>;
  close(): Promise<void>;
}

/** The twelve servers, each on its own port. */
export async function startManyServers(): Promise<ManyServers> {
  const served: Record<string, StatelessMcpHttp> = {};
  for (const [name, things] of Object.entries(SERVERS)) {
    served[name] = await serveStatelessMcp(() => {
      const server = new McpServer({ name, version: '1.0.0' });
      for (const thing of things) {
        for (const verb of VERBS) {
          const tool = `${verb}_${thing}`;
          server.registerTool(
            tool,
            { description: `${title(verb, thing)} in ${name}.`, inputSchema: { ref: z.string().optional().describe(`Which ${thing}, if any`) } },
            (args) => ({ content: [{ type: 'text', text: `${name}/${tool} ran with ${JSON.stringify(args)}` }] }),
          );
        }
      }
      return server;
    });
  }
  return {
    urls: Object.fromEntries(Object.entries(served).map(([n, s]) => [n, s.url])),
    close: async () => {
      for (const s of Object.values(served)) await s.close();
    },
  };
}

/** Rough tokens of the tool list a step offered: JSON characters over four, as providers bill schemas. */
export function offeredTokens(tools: readonly LlmToolSpec[]): number {
  return Math.ceil(JSON.stringify(tools).length / 4);
}

/**
 * The scripted model: searches with the user's words while the search tool is offered, calls the
 * first tool the search found (only if this step offers it: otherwise it says so), then answers with
 * the tool's result. Offered all tools, it calls the request's tool by name. Records every request.
 */
export function searchingModel(): LlmClient & { requests: LlmRequest[] } {
  const answer = (req: LlmRequest): LlmResponse => {
    const last = req.messages.at(-1);
    const offered = new Set(req.tools.map((t) => t.name));
    const user = [...req.messages].reverse().find((m) => m.role === 'user');
    const userText = typeof user?.content === 'string' ? user.content : '';
    const call = (name: string, args: Record<string, unknown>): LlmResponse => ({
      text: null,
      toolCalls: [{ id: `c${req.step}`, name, arguments: JSON.stringify(args) }],
      finishReason: 'tool_calls',
    });
    if (last?.role === 'user') {
      if (offered.has('host__search_tools')) return call('host__search_tools', { query: userText });
      const wanted = REQUESTS.find((r) => r.text === userText);
      return wanted ? call(`${wanted.server}__${wanted.tool}`, { ref: 'x' }) : { text: 'no tool', toolCalls: [], finishReason: 'stop' };
    }
    const content = last?.role === 'tool' && typeof last.content === 'string' ? last.content : '';
    const found = /^- (\S+):/m.exec(content)?.[1];
    const previous = req.messages.at(-2);
    if (previous?.role === 'assistant' && previous.toolCalls?.[0]?.name === 'host__search_tools' && found) {
      if (!offered.has(found)) return { text: `NOT OFFERED: ${found}`, toolCalls: [], finishReason: 'stop' };
      return call(found, { ref: 'x' });
    }
    return { text: `done: ${content}`, toolCalls: [], finishReason: 'stop' };
  };
  return scriptedModel('searching-model', (req) => ({ ...answer(req), usage: { promptTokens: offeredTokens(req.tools), completionTokens: 1 } }));
}
