export { directoryWorkflow } from './directory';
export { organizationWorkflow } from './organization';
export { installationWorkflow } from './installation';
export { eventWorkflow } from './event';
export { deliveryWorkflow } from './delivery';
export { integrationWorkflow, integrationVersionWorkflow, registryWorkflow } from './integration';
