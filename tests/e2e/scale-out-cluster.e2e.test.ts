/**
 * The scale-out suite (./scale-out.suite.ts) on the full Temporal server on PostgreSQL
 * (scripts/temporal-cluster.sh, built from Go modules before jest starts): what production runs,
 * rather than the dev server.
 */
import { startTemporalCluster } from '../helpers/temporal-cluster';
import { scaleOutSuite } from './scale-out.suite';

scaleOutSuite(startTemporalCluster);
