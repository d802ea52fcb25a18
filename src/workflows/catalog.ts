import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Catalog } from '../shared/tool-types';

const { listCatalog } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 2, initialInterval: '200 milliseconds' },
});

/**
 * Asks a worker for the live tool catalog and server health. The API has no MCP connections of its
 * own (stdio servers are children of the workers), so /v1/tools and /healthz come through here.
 */
export async function catalogWorkflow(): Promise<Catalog> {
  return await listCatalog.executeWithOptions({ summary: 'list tools of all MCP servers' }, []);
}
