export { directoryWorkflow } from './directory';
export { installationWorkflow } from './installation';
export { deliveryEpochWorkflow, deliveryShardWorkflow } from './delivery-shard';
export { retentionWorkflow } from './retention';
export { integrationWorkflow, integrationVersionWorkflow, registryWorkflow } from './integration';
