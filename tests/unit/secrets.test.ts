import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_TIMEOUTS, type McpConfig } from '../../src/mcp/config';
import { classifyRequestError, McpAbortError, McpPermanentError, McpTransientError, isMcpFailure } from '../../src/mcp/failures';
import { Failure } from '../../src/shared/failures';
import { configSecrets, scrubSecrets, serverSecrets } from '../../src/security/secrets';

const base = { disabled: false, timeouts: { ...DEFAULT_TIMEOUTS } };
const config: McpConfig = {
  source: 'test',
  warnings: [],
  mcpServers: {
    vault: {
      ...base,
      name: 'vault',
      kind: 'http',
      url: 'https://user:pa55word@vault.example/mcp/tok-in-path?key=query-secret',
      headers: { Authorization: 'Bearer header-token-123', 'X-Flag': 'on' },
      transport: 'auto',
      forwardUserToken: false,
    },
    notes: { ...base, name: 'notes', kind: 'stdio', command: 'node', args: [], cwd: '/', env: { NOTES_KEY: 'notes-env-secret', DEBUG: '1' } },
  },
};

describe('one secret collector', () => {
  test('an HTTP server: header values, the bearer token alone, and the secret parts of its URL', () => {
    const secrets = serverSecrets(config.mcpServers['vault']!);
    expect(secrets).toEqual(
      expect.arrayContaining(['Bearer header-token-123', 'header-token-123', 'pa55word', 'user', 'key=query-secret', '/mcp/tok-in-path?key=query-secret']),
    );
    // Too short to be a secret worth shredding messages over.
    expect(secrets).not.toContain('on');
  });

  test('a stdio server: its env values; the whole config: every server', () => {
    expect(serverSecrets(config.mcpServers['notes']!)).toEqual(['notes-env-secret']);
    const all = configSecrets(config);
    expect(all).toContain('notes-env-secret');
    expect(all).toContain('header-token-123');
    // Longest first, so a secret that contains another is hidden whole.
    expect([...all].sort((a, b) => b.length - a.length)).toEqual(all);
  });

  test('the scrubber hides every secret, longest first, and ignores empty or tiny values', () => {
    const text = 'auth Bearer header-token-123 failed; token header-token-123; env notes-env-secret';
    const out = scrubSecrets(text, ['header-token-123', 'Bearer header-token-123', 'notes-env-secret', '', 'a']);
    expect(out).toBe('auth [redacted] failed; token [redacted]; env [redacted]');
  });
});

describe('one MCP error class with a kind', () => {
  test('each kind carries its failure type as its name', () => {
    const transient = new McpTransientError('s', 'down');
    const permanent = new McpPermanentError('s', 'refused');
    const aborted = new McpAbortError('s');
    expect([transient.name, permanent.name, aborted.name]).toEqual([Failure.McpTransientError, Failure.McpPermanentError, 'AbortError']);
    expect(isMcpFailure(transient, 'transient')).toBe(true);
    expect(isMcpFailure(permanent, 'transient')).toBe(false);
    expect(isMcpFailure(new Error('x'), 'permanent')).toBe(false);
  });

  test('request errors are classified once, with secrets scrubbed from the reason', () => {
    const secrets = ['sekrit-value'];
    const opts = { timeoutMs: 1000, secrets };
    // The SDK's own timeout and lost connection, as it builds them (tests/unit/mcp-failure-health.test.ts).
    expect(classifyRequestError(new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: 1000 }), opts)).toMatchObject({ kind: 'transient', connection: 'probe' });
    expect(classifyRequestError(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), opts)).toMatchObject({ kind: 'transient', connection: 'retire' });
    expect(classifyRequestError(new McpError(ErrorCode.InvalidParams, 'bad sekrit-value'), opts)).toEqual({ kind: 'refused', reason: 'bad [redacted]' });
    expect(classifyRequestError(new McpError(ErrorCode.InternalError, 'oops'), opts)).toMatchObject({ kind: 'transient', connection: 'keep' });
    const http = classifyRequestError(new StreamableHTTPError(502, 'bad gateway at sekrit-value'), opts);
    expect(http).toMatchObject({ kind: 'transient', connection: 'retire' });
    expect(JSON.stringify(http)).not.toContain('sekrit');
    const controller = new AbortController();
    controller.abort('stop');
    // The SDK reports its own abort as a timeout: the signal decides.
    expect(classifyRequestError(new McpError(ErrorCode.RequestTimeout, 'x'), { ...opts, signal: controller.signal })).toEqual({ kind: 'aborted', cause: 'stop' });
  });
});
