/** The tool catalog as each caller's model would see it, and every configured server's state. */
import { decideTool, filterCatalog } from '../../core/policy';
import type { UserContext } from '../../shared/user';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';
import { notFound } from '../errors';

export function createCatalog(opts: TurnServiceOptions) {
  const { gateway } = opts;
  return {
    /** The tools `user`'s model would be offered (the same filter the turn applies), and every server's state. */
    async catalog(user: UserContext) {
      const catalog = await unavailableOnError(() => gateway.catalog());
      const policy = opts.policy();
      return {
        tools: filterCatalog(policy, user, catalog.tools).map((t) => {
          const decision = decideTool(policy, user, t.server, t.tool);
          return {
            name: t.name,
            server: t.server,
            tool: t.tool,
            description: t.description,
            inputSchema: t.inputSchema,
            annotations: t.annotations,
            needsApproval: decision.allowed && decision.needsApproval,
          };
        }),
        servers: catalog.servers,
      };
    },

    /**
     * Has a worker list the servers again now, connecting `server` if it is down (every server that is
     * down, in fact), and answers its state: 404 for a server the catalog does not know.
     */
    async reconnect(server: string) {
      const catalog = await unavailableOnError(() => gateway.catalog({ fresh: true }));
      const status = catalog.servers.find((s) => s.server === server);
      if (!status) throw notFound(`MCP server ${server}`);
      return status;
    },

    async servers() {
      const catalog = await unavailableOnError(() => gateway.catalog());
      return { servers: catalog.servers };
    },
  };
}
