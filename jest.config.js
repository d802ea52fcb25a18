/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
    // light-my-request (fastify.inject) depends on cookie@2, which ships ESM only; jest runs CommonJS.
    '^.+/cookie/dist/.+\\.js$': ['ts-jest', { tsconfig: 'tsconfig.jest.json', isolatedModules: true }],
    // jose ships ESM only too (Node runs it through require(esm); jest cannot).
    '^.+/node_modules/jose/dist/.+\\.js$': ['ts-jest', { tsconfig: 'tsconfig.jest.json', isolatedModules: true }],
    // So does @modelcontextprotocol/ext-tasks (MCP tasks on 2026-07-28, src/mcp/tasks-v2.ts).
    '^.+/node_modules/@modelcontextprotocol/ext-tasks/dist/.+\\.js$': ['ts-jest', { tsconfig: 'tsconfig.jest.json', isolatedModules: true }],
    // And dpop (DPoP proofs, src/mcp/oauth/dpop.ts).
    '^.+/node_modules/dpop/build/.+\\.js$': ['ts-jest', { tsconfig: 'tsconfig.jest.json', isolatedModules: true }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(light-my-request/node_modules/)?cookie/|jose/|@modelcontextprotocol/ext-tasks/|dpop/)'],
  // Suites that start real processes (Temporal, MCP servers, the demo model) need room.
  testTimeout: 60_000,
  // Two cores: the heavy suites run one at a time so timings stay sane.
  maxWorkers: 2,
};
