import { issuerRefusal, metadataIssuerRefusal } from '../../src/mcp/oauth/issuer';

const metadata = (issuer: string, extra: Record<string, unknown> = {}) => ({
  issuer,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  response_types_supported: ['code'],
  ...extra,
});

describe('the authorization server metadata names the issuer it was fetched for (RFC 8414 §3.3)', () => {
  test('the same issuer is accepted, as is the slash the SDK appends to a pathless fallback URL', () => {
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test/tenant', authorizationServerMetadata: metadata('https://as.test/tenant') })).toBeUndefined();
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test/', authorizationServerMetadata: metadata('https://as.test') })).toBeUndefined();
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test/tenant' })).toBeUndefined();
  });

  test('another issuer, or another path or trailing slash on a path, is refused', () => {
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test', authorizationServerMetadata: metadata('https://evil.test') })).toMatch(/names issuer "https:\/\/evil.test"/);
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test/tenant/', authorizationServerMetadata: metadata('https://as.test/tenant') })).toBeDefined();
    expect(metadataIssuerRefusal({ authorizationServerUrl: 'https://as.test/a', authorizationServerMetadata: metadata('https://as.test/b') })).toBeDefined();
  });
});

describe('an authorization response comes back from the issuer it was sent to (RFC 9207)', () => {
  const promised = metadata('https://as.test', { authorization_response_iss_parameter_supported: true });

  test('the issuer itself, or no iss where none was promised, is accepted', () => {
    expect(issuerRefusal('https://as.test', promised)).toBeUndefined();
    expect(issuerRefusal(undefined, metadata('https://as.test'))).toBeUndefined();
    expect(issuerRefusal(undefined, undefined)).toBeUndefined();
  });

  test('another issuer is refused, compared as written (no trailing slash, case or port normalization)', () => {
    for (const iss of ['https://evil.test', 'https://as.test/', 'https://AS.test', 'https://as.test:443']) {
      expect(issuerRefusal(iss, promised)).toMatch(/came from issuer/);
      // Compared even where the server did not promise an iss.
      expect(issuerRefusal(iss, metadata('https://as.test'))).toMatch(/came from issuer/);
    }
  });

  test('no iss where the server promised one is refused', () => {
    expect(issuerRefusal(undefined, promised)).toMatch(/promised an `iss`/);
  });
});
