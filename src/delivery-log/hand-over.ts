import type { Logger } from '../logger';
import type { PendingDelivery } from './rows';

/**
 * Hands over deliveries just recorded (replays, an operation's page) through ingest's
 * `handOverRecorded`. Recorded, they are accepted: a hand-over that fails is left to the
 * sweep of stranded deliveries (1,000 a minute), never retried by the caller into a second
 * record (and a second delivery).
 */
export async function handOverAccepted<T extends PendingDelivery>(ingest: { handOverRecorded(deliveries: T[]): Promise<void> }, deliveries: T[], logger: Logger): Promise<void> {
  await ingest.handOverRecorded(deliveries).catch((err: Error) => logger.warn({ err: err.message, deliveries: deliveries.length, ids: deliveries.slice(0, 10).map((delivery) => delivery.id) }, 'deliveries recorded but not handed over yet; the stranded sweep hands them over'));
}
