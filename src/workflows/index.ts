export { turnWorkflow } from './turn';
export { catalogWorkflow } from './catalog';
export { sessionWorkflow } from './session';
