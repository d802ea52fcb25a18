/** The tool catalog as each caller's model would see it, and every configured server's state. */
import { filterCatalog } from '../../core/policy';
import type { UserContext } from '../../shared/user';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';

export function createCatalog(opts: TurnServiceOptions) {
  const { gateway } = opts;
  return {
    /** The tools `user`'s model would be offered (the same filter the turn applies), and every server's state. */
    async catalog(user: UserContext) {
      const catalog = await unavailableOnError(() => gateway.catalog());
      return {
        tools: filterCatalog(opts.policy(), user, catalog.tools).map((t) => ({
          name: t.name,
          server: t.server,
          tool: t.tool,
          description: t.description,
          inputSchema: t.inputSchema,
          annotations: t.annotations,
        })),
        servers: catalog.servers,
      };
    },

    async servers() {
      const catalog = await unavailableOnError(() => gateway.catalog());
      return { servers: catalog.servers };
    },
  };
}
