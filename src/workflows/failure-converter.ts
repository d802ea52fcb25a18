import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failure messages and stack traces move into a payload (`encodedAttributes`) that the payload codec
 * seals when keys are configured: an LLM provider's or a server's error text may quote what the user
 * wrote (docs/decisions/0019-payload-encryption.md). Without keys the payload is plain JSON, readable
 * in the failure's details; clients (the API) restore message and stack either way. Bundled into the workflow code (workflowBundleOptions)
 * and loaded by the worker for activity failures (dataConverter.failureConverterPath).
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
