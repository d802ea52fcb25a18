/**
 * The console (`/console/`, with `/` redirecting to it): static files from the repository's `console/`
 * folder and the browser modules it imports (Preact, its hooks, htm; marked and DOMPurify for answers
 * as Markdown) from node_modules. It is a
 * client of the public API like any other; these routes need no token. In local mode (`npm start`) it
 * also offers tokens for the demo users, so a newcomer can sign in with one click.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import type { DemoRole } from '../../config/local-mode';

export interface ConsoleOptions {
  /** Where a turn's link points: the Temporal web UI and the namespace. */
  temporalUiUrl?: string;
  namespace: string;
  /** Local mode only: signs a token for a demo user. Absent in production. */
  demoToken?: (role: DemoRole) => Promise<string>;
}

/** The repository root, from src/api/routes (ts-jest) or dist/src/api/routes (compiled). */
function projectRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('console: cannot find the project root (package.json)');
    dir = up;
  }
  return dir;
}

/** The browser modules the console's import map names, served from the pinned packages. */
const VENDOR: Record<string, string> = {
  'preact.module.js': 'preact/dist/preact.module.js',
  'hooks.module.js': 'preact/hooks/dist/hooks.module.js',
  'htm.module.js': 'htm/dist/htm.module.js',
  'marked.esm.js': 'marked/lib/marked.esm.js',
  'purify.es.mjs': 'dompurify/dist/purify.es.mjs',
};

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const root = projectRoot();
  // Without their source-map comments: the maps are not served, and a browser would ask for them.
  const read = (file: string) => readFileSync(path.join(root, 'node_modules', file), 'utf8').replace(/^\/\/# sourceMappingURL=.*$/m, '');
  const vendor = new Map(Object.entries(VENDOR).map(([name, file]) => [name, read(file)]));

  await app.register(fastifyStatic, { root: path.join(root, 'console'), prefix: '/console/', index: 'index.html', cacheControl: false });
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/'));
  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/'));

  app.get<{ Params: { name: string } }>('/console/vendor/:name', { schema: { hide: true } }, async (request, reply) => {
    const code = vendor.get(request.params.name);
    if (code === undefined) return reply.status(404).send({ error: { code: 'not_found', message: `No console module ${request.params.name}` } });
    return reply.type('text/javascript; charset=utf-8').send(code);
  });

  app.get('/console/config.json', { schema: { hide: true } }, async () => ({
    ...(opts.temporalUiUrl ? { temporalUiUrl: opts.temporalUiUrl.replace(/\/+$/, '') } : {}),
    namespace: opts.namespace,
    demoUsers: opts.demoToken !== undefined,
  }));

  app.get('/console/demo-tokens', { schema: { hide: true } }, async (_request, reply) => {
    if (!opts.demoToken) return reply.status(404).send({ error: { code: 'not_found', message: 'Demo sign-in is only offered in local mode.' } });
    const roles: DemoRole[] = ['admin', 'teacher', 'student'];
    return { tokens: Object.fromEntries(await Promise.all(roles.map(async (role) => [role, await opts.demoToken?.(role)]))) };
  });
};
