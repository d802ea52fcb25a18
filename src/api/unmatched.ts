/**
 * Requests no route matched. A path the app serves under other methods gets `405 Method Not Allowed`
 * with `Allow` (RFC 9110 §15.5.6), any other `404`; both in the API's JSON error shape.
 *
 * They are answered in `onRequest`, before the body is read: Fastify would otherwise parse the body of
 * a request for no route (a DELETE with JSON, ...), answer a bad one `400` and close the connection
 * (`connection: close` after a parse error), which a client still sending sees as EPIPE. Node discards
 * an unread body after the response, and the connection stays usable.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

/** `/v1/turns/:turnId` → a regular expression for the concrete paths the router sends to it. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/** Registers the hooks; call before any route is declared (the paths are collected as routes are added). */
export function answerUnmatched(app: FastifyInstance): void {
  const known = new Map<string, KnownPath>();
  app.addHook('onRoute', (route) => {
    // A catch-all (the CORS preflight's `OPTIONS *`) would make every path known.
    if (route.url === '*' || route.url === '/*') return;
    const entry = known.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
    for (const method of [route.method].flat()) entry.methods.add(method);
    known.set(route.url, entry);
  });

  const allowed = (path: string): string[] => {
    const methods = new Set<string>();
    for (const { pattern, methods: m } of known.values()) if (pattern.test(path)) for (const method of m) methods.add(method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };

  const answer = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const path = request.url.split('?')[0] ?? '';
    const allow = allowed(path);
    // A method the path lists, yet no match (a path the router reads differently): simply not found.
    if (allow.length > 0 && !allow.includes(request.method)) {
      return reply
        .status(405)
        .header('allow', allow.join(', '))
        .send({ error: { code: 'method_not_allowed', message: `${request.method} is not allowed on ${path}; use ${allow.join(', ')}` } });
    }
    return reply.status(404).send({ error: { code: 'not_found', message: `No route for ${request.method} ${path}` } });
  };

  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answer(request, reply);
  });
  app.setNotFoundHandler(answer);
}
