export { directoryWorkflow } from './directory';
export { installationWorkflow } from './installation';
export { deliveryEpochWorkflow, deliveryShardWorkflow } from './delivery-shard';
export { retentionWorkflow } from './retention';
export { strandedDeliveriesWorkflow } from './stranded';
export { integrationWorkflow, integrationVersionWorkflow, registryWorkflow } from './integration';
export { rolloutWorkflow } from './rollout';
export { operationWorkflow } from './operation';
export { orderedLineWorkflow } from './ordered-line';
