export { turnWorkflow } from './turn';
export { catalogWorkflow } from './catalog';
export { sessionMemoryWorkflow } from './session-memory';
