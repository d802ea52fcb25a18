/**
 * The tool catalog and the MCP servers' states, as a worker lists them: a short-lived catalog
 * workflow answers with the worker's listing (which connects, on the way, any server that is down).
 */
import type { Client } from '@temporalio/client';
import type { Catalog } from '../../shared/tool-types';
import { CATALOG_WORKFLOW_TYPE } from '../../workflows/definitions';

export interface CatalogReaderOptions {
  client: Client;
  taskQueue: string;
  /** How long a catalog answer is reused: /v1/tools and /v1/servers must not start a workflow per call. */
  catalogCacheMs: number;
  /** How long to wait for a worker to answer a catalog request. */
  catalogTimeoutMs?: number;
}

export function createCatalogReader(opts: CatalogReaderOptions) {
  const { client } = opts;
  let cached: { at: number; value: Promise<Catalog> } | undefined;
  /** The listing asked for with `fresh` and not answered yet: callers who ask meanwhile share it. */
  let fresh: Promise<Catalog> | undefined;

  const list = (workflowId: string): Promise<Catalog> =>
    withTimeout(
      client.workflow.execute(CATALOG_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: opts.taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowExecutionTimeout: '30 seconds',
        staticSummary: 'Tool catalog and MCP server health for the API',
      }) as Promise<Catalog>,
      opts.catalogTimeoutMs ?? 5_000,
      'no worker answered the catalog request',
    );

  const remember = (at: number, value: Promise<Catalog>): Promise<Catalog> => {
    cached = { at, value };
    value.catch(() => {
      if (cached?.value === value) cached = undefined;
    });
    return value;
  };

  return {
    async catalog(read: { fresh?: boolean } = {}): Promise<Catalog> {
      const now = Date.now();
      if (read.fresh) {
        // At most one fresh listing at a time, whoever asks: a button pressed by many is one workflow.
        fresh ??= remember(now, list(`catalog-fresh-${now}`)).finally(() => (fresh = undefined));
        return await fresh;
      }
      if (cached && now - cached.at < opts.catalogCacheMs) return await cached.value;
      // One catalog workflow per cache window: concurrent callers share it (USE_EXISTING).
      const bucket = Math.floor(now / Math.max(opts.catalogCacheMs, 1_000));
      return await remember(now, list(`catalog-${bucket}`));
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
