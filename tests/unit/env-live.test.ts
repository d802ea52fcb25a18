/** The worker's live-text settings (decision 0020): LIVE_PUSH_URL as a list, LIVE_VIA and what it needs. */
import { randomBytes } from 'node:crypto';
import { ConfigError, loadEnvConfig } from '../../src/config';

// A real-looking secret: placeholders (one repeated character among them) are refused at start.
const base = { JWT_SECRET: randomBytes(32).toString('hex') };

test('LIVE_PUSH_URL takes one address or several, comma-separated; each must be a URL', () => {
  expect(loadEnvConfig({ ...base, LIVE_PUSH_URL: 'http://api:3000/internal/live' }).LIVE_PUSH_URL).toEqual(['http://api:3000/internal/live']);
  expect(loadEnvConfig({ ...base, LIVE_PUSH_URL: 'http://a:3000/internal/live, http://b:3000/internal/live,' }).LIVE_PUSH_URL).toEqual([
    'http://a:3000/internal/live',
    'http://b:3000/internal/live',
  ]);
  expect(loadEnvConfig({ ...base, LIVE_PUSH_URL: '' }).LIVE_PUSH_URL).toBeUndefined();
  expect(() => loadEnvConfig({ ...base, LIVE_PUSH_URL: 'http://a/internal/live,api:3000' })).toThrow(/LIVE_PUSH_URL\[1\]: each must be an http\(s\) URL/);
});

test('LIVE_VIA: auto by default; bus needs POSTGRES_URL', () => {
  expect(loadEnvConfig(base).LIVE_VIA).toBe('auto');
  expect(loadEnvConfig({ ...base, LIVE_VIA: 'bus', POSTGRES_URL: `postgres://u:${randomBytes(12).toString('hex')}@db:5432/dmh` }).LIVE_VIA).toBe('bus');
  expect(() => loadEnvConfig({ ...base, LIVE_VIA: 'bus' })).toThrow(ConfigError);
  expect(() => loadEnvConfig({ ...base, LIVE_VIA: 'bus' })).toThrow(/LIVE_VIA: bus needs POSTGRES_URL/);
  expect(() => loadEnvConfig({ ...base, LIVE_VIA: 'nats' })).toThrow(/LIVE_VIA/);
});
