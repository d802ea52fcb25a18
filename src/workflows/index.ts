export { turnWorkflow } from './turn';
export { catalogWorkflow } from './catalog';
export { sessionWorkflow } from './session';
export { sessionMemoryWorkflow } from './session-memory';
