/**
 * The host's MCP client path as a client under test for the official conformance suite
 * (`@modelcontextprotocol/conformance client --command "node dist/tests/conformance/client.js"`).
 *
 * The runner starts a scenario's server and runs this with its URL (and the scenario in
 * MCP_CONFORMANCE_SCENARIO, extra data in MCP_CONFORMANCE_CONTEXT). Nothing here speaks MCP or OAuth
 * itself: it writes the server into a config of the shape users write, parses it with the host's
 * config loader, and drives the worker's own pool (McpServerHub) with its OAuth and elicitation
 * support: list the tools, call each one. Only the user's and the model's parts are played here: the
 * browser step of an authorization (headless), the answer to an elicitation (accept, leaving defaults
 * to the SDK), and the arguments of each call (argumentsFor).
 */
import { MemoryOAuthStore } from '../../src/mcp/oauth';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { headlessAuthorizer } from '../helpers/oauth';
import { sampleArguments } from './sample-arguments';

/** The scenarios' authorization servers accept any redirect URI; nothing listens here. */
const REDIRECT_URL = 'http://localhost:3000/callback';
/** Offered as the client id where the authorization server supports client ID metadata documents. */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

/**
 * Room for a loaded machine: the runner gives the whole client process its own deadline (120 s in
 * tests/conformance/client-runs.ts), so the host's connect deadline (10 s by default) is not what judges.
 */
const TIMEOUTS = { connectMs: 60_000, listMs: 60_000, callMs: 60_000 };

/**
 * The revision the runner asks for (0.2 sets MCP_CONFORMANCE_PROTOCOL_VERSION; 0.1.16 does not): a
 * scenario of 2026-07-28 is a server the user knows speaks it, so its entry pins it, as a user's
 * would. Anything else is left to `auto` (discovery, then 2025-11-25), the default users get.
 */
function protocolFor(version: string | undefined): { protocol?: string } {
  return version === '2026-07-28' ? { protocol: version } : {};
}

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

/**
 * The arguments a model would choose where a scenario's tools ask for particular values in their
 * descriptions (http-custom-headers: values a header can carry only in Base64, and a parameter left
 * null, whose `Mcp-Param-*` header must then be omitted). Every other tool gets sampleArguments.
 */
const CHOSEN_ARGUMENTS: Record<string, Record<string, Record<string, unknown>>> = {
  'http-custom-headers': {
    test_custom_headers: {
      region: 'us-west1',
      priority: 5,
      verbose: false,
      debug: true,
      empty_val: '',
      method_val: 'GET',
      float_val: 1.5,
      non_ascii_val: 'café',
      whitespace_val: ' padded ',
      leading_space_val: ' leading',
      trailing_space_val: 'trailing ',
      internal_space_val: 'a b c',
      control_char_val: 'bell\u0007',
      crlf_val: 'line\r\nbreak',
      query: 'test',
    },
    test_custom_headers_null: { region: 'us-west1', priority: 1, verbose: null, query: 'test' },
  },
};

type CatalogTool = Awaited<ReturnType<McpServerHub['catalog']>>['tools'][number];

/**
 * What the model would send: the chosen arguments above; for json-schema-2020-12-preservation's echo
 * tool, the schema of its other tool exactly as the catalog (what the model sees) has it; else a sample.
 */
function argumentsFor(scenario: string, tool: CatalogTool, tools: CatalogTool[]): Record<string, unknown> {
  const chosen = CHOSEN_ARGUMENTS[scenario]?.[tool.tool];
  if (chosen) return chosen;
  if (scenario === 'json-schema-2020-12-preservation' && tool.tool === 'json_schema_echo') {
    return { schema: tools.find((t) => t.tool === 'json_schema_2020_12_tool')?.inputSchema ?? {} };
  }
  return sampleArguments(tool.inputSchema as never);
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (!url) throw new Error('usage: client.js <server-url>');
  const scenario = process.env['MCP_CONFORMANCE_SCENARIO'] ?? '';
  const context = JSON.parse(process.env['MCP_CONFORMANCE_CONTEXT'] ?? '{}') as Context;
  const auth = authFor(scenario, context);
  const config = parseMcpConfig(
    { mcpServers: { conformance: { url, transport: 'streamable-http', timeouts: TIMEOUTS, ...protocolFor(process.env['MCP_CONFORMANCE_PROTOCOL_VERSION']), ...(auth ? { auth } : {}) } } },
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
      const outcome = await hub.callTool({ server: tool.server, tool: tool.tool, arguments: argumentsFor(scenario, tool, catalog.tools) });
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
