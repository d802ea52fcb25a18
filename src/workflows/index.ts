export { turnWorkflow } from './turn';
export { catalogWorkflow } from './catalog';
