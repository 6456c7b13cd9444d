/** What webhook receivers import: `integration-platform/receiver`. */
export { verifySignature, signatureHeader, SIGNATURE_HEADER, type Verification, type VerifyOptions } from '../webhooks/signature';
export { createExampleReceiver, toNodeListener, type ExampleReceiverOptions, type WebhookEvent } from './example-receiver';
