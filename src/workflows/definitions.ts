/**
 * Queries, signals and names shared by the workflow, the API and tests, so payload types are checked
 * end to end. Imported by non-workflow code too: keep it free of workflow-only side effects.
 */
import { defineQuery } from '@temporalio/workflow';
import type { TurnState } from '../shared/turn';

export const TURN_WORKFLOW_TYPE = 'turnWorkflow';
export const CATALOG_WORKFLOW_TYPE = 'catalogWorkflow';

/** The turn's state; events are limited to those with an id greater than the argument. */
export const turnStateQuery = defineQuery<TurnState, [afterEventId?: number]>('turnState');

/** Failure type of a turn that ended in error; its first detail is the final TurnState. */
export const TURN_FAILED_ERROR_TYPE = 'TurnFailed';

/** Custom search attribute set on every turn, registered at dev-server start and by the API. */
export const SESSION_ID_SEARCH_ATTRIBUTE = 'SessionId';
