import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { EncryptionCodec } from '../temporal/codec';

/** What the API needs from the outside; tests build it with a real client per task queue. */
export interface ApiDeps {
  client: Client;
  taskQueue: string;
  baseUrl: string;
  adminToken: string;
  allowPrivateTargets: boolean;
  codec: EncryptionCodec;
  logger: Logger;
  /** The embedded default trusts loopback callers of the codec endpoint (its own UI); production asks for the token. */
  codecTrustsLoopback: boolean;
  /** Origins allowed to call the codec endpoint from a browser (the Temporal UI). */
  codecCorsOrigins: string[];
}
