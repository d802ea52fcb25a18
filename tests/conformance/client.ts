/**
 * The host's MCP client path as a client under test for the official conformance suite
 * (`@modelcontextprotocol/conformance client --command "node dist/tests/conformance/client.js"`).
 *
 * The runner starts a scenario's server and runs this with its URL (and the scenario in
 * MCP_CONFORMANCE_SCENARIO, extra data in MCP_CONFORMANCE_CONTEXT). Nothing here speaks MCP or OAuth
 * itself: it writes the server into a config of the shape users write, parses it with the host's
 * config loader, and drives the worker's own pool (McpServerHub) with its OAuth and elicitation
 * support: list the tools, call each one. Only the user's part is played here: the browser step of an
 * authorization (headless) and the answer to an elicitation (accept, leaving defaults to the SDK).
 */
import { MemoryOAuthStore } from '../../src/mcp/oauth';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { headlessAuthorizer } from '../helpers/oauth';

/** The scenarios' authorization servers accept any redirect URI; nothing listens here. */
const REDIRECT_URL = 'http://localhost:3000/callback';
/** Offered as the client id where the authorization server supports client ID metadata documents. */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

type Context = { client_id?: string; client_secret?: string; private_key_pem?: string; signing_algorithm?: string };

function authFor(scenario: string, context: Context): Record<string, unknown> | undefined {
  if (scenario === 'auth/client-credentials-basic') {
    return { type: 'client_credentials', clientId: context.client_id, clientSecret: context.client_secret };
  }
  if (scenario === 'auth/client-credentials-jwt') {
    return {
      type: 'client_credentials',
      clientId: context.client_id,
      privateKey: context.private_key_pem,
      ...(context.signing_algorithm ? { algorithm: context.signing_algorithm } : {}),
    };
  }
  if (scenario === 'auth/pre-registration') {
    return { type: 'oauth', clientId: context.client_id, clientSecret: context.client_secret };
  }
  if (scenario.startsWith('auth/')) return { type: 'oauth', clientMetadataUrl: CLIENT_METADATA_URL };
  return undefined;
}

/** Arguments that satisfy a tool's input schema well enough for a test server. */
function sampleArguments(schema: { properties?: Record<string, { type?: string }> } | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  let n = 1;
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    const type = prop.type ?? 'string';
    args[name] = type === 'number' || type === 'integer' ? n++ : type === 'boolean' ? true : type === 'object' ? {} : type === 'array' ? [] : 'test';
  }
  return args;
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (!url) throw new Error('usage: client.js <server-url>');
  const scenario = process.env['MCP_CONFORMANCE_SCENARIO'] ?? '';
  const context = JSON.parse(process.env['MCP_CONFORMANCE_CONTEXT'] ?? '{}') as Context;
  const auth = authFor(scenario, context);
  const config = parseMcpConfig(
    { mcpServers: { conformance: { url, transport: 'streamable-http', ...(auth ? { auth } : {}) } } },
    process.env,
    process.cwd(),
    `conformance scenario ${scenario}`,
  );
  const hub = new McpServerHub(config, {
    clientInfo: { name: 'durable-mcp-host', version: '0.1.0' },
    oauth: { store: new MemoryOAuthStore(), redirectUrl: REDIRECT_URL, clientName: 'durable-mcp-host', authorizer: headlessAuthorizer },
    elicit: () => Promise.resolve({ action: 'accept', content: {} }),
  });
  try {
    const catalog = await hub.catalog();
    const failed = catalog.servers.find((s) => s.state !== 'connected');
    if (failed) throw new Error(`listing tools failed: ${failed.error ?? failed.state}`);
    for (const tool of catalog.tools) {
      const outcome = await hub.callTool({ server: tool.server, tool: tool.tool, arguments: sampleArguments(tool.inputSchema as never) });
      console.log(`${tool.tool}: ${outcome.isError ? 'error' : 'ok'}: ${outcome.text.slice(0, 200)}`);
    }
  } finally {
    await hub.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
