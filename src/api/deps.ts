import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { EncryptionCodec } from '../temporal/codec';
import type { DestinationGuard } from '../net/destination-guard';

/** What the API needs from the outside; tests build it with a real client per task queue. */
export interface ApiDeps {
  client: Client;
  taskQueue: string;
  baseUrl: string;
  adminToken: string;
  /** Where webhook URLs may point (PLATFORM_ALLOW_PRIVATE_TARGETS, never the platform's ports). */
  webhookGuard: DestinationGuard;
  codec: EncryptionCodec;
  logger: Logger;
  /** The embedded default trusts loopback callers of the codec endpoint (its own UI); production asks for the token. */
  codecTrustsLoopback: boolean;
  /** Origins allowed to call the codec endpoint from a browser (the Temporal UI). */
  codecCorsOrigins: string[];
}
