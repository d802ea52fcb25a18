/**
 * The HTTP and WebSocket contract of the API (ARCHITECTURE.md §9), as zod schemas: the handlers parse
 * requests with them and openapi.ts generates the document from them, so the two cannot drift apart.
 *
 * Schemas only: no Fastify, no I/O. Response schemas describe what the handlers send; they are not
 * used to filter responses (see openapi.ts).
 *
 * One file per part under ./schemas (common pieces, turns, sessions, usage, catalog and health, the
 * WebSocket frames); this file is the one place the rest of the code imports them from.
 */
// The event types are the workflows' own list: documented and produced cannot drift apart.
export { TURN_EVENT_TYPES } from '../shared/turn';
export * from './schemas/common';
export * from './schemas/turns';
export * from './schemas/sessions';
export * from './schemas/usage';
export * from './schemas/catalog-health';
export * from './schemas/websocket';
export * from './schemas/console-support';
