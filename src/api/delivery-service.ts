import type { DeliveryReads } from '../delivery-log/delivery-reads';
import type { EventRecords } from '../delivery-log/event-records';
import type { Delivery, DeliveryFilter, DeliverySummary, PageCursor } from '../delivery-log/types';
import { notFound } from './errors';
import type { HandOver, IngestService } from '../ingest/ingest-service';
import type { PageTokens } from './page-tokens';
import { activeTraceparent } from '../tracing';
import type { Logger } from '../logger';

/** Deliveries a bulk replay reads per page. */
const PAGE = 200;

/** Deliveries as the API serves them: from the delivery log, replayed through ingest's shards. */
export class DeliveryService {
  constructor(
    private readonly log: DeliveryReads,
    private readonly events: EventRecords,
    private readonly ingest: IngestService,
    private readonly pageTokens: PageTokens,
    private readonly logger: Logger,
  ) {}

  async list(filter: DeliveryFilter, pageSize: number, pageToken?: string): Promise<{ items: DeliverySummary[]; nextPageToken?: string }> {
    return this.pageTokens.page<PageCursor, DeliverySummary>('deliveries', pageToken, (after) => this.log.list(filter, pageSize, after));
  }

  get(id: string): Promise<Delivery | undefined> {
    return this.log.get(id);
  }

  /** A new delivery with the same body and eventId: `<eventId>:<installationId>:replay-<n>`. */
  async replay(original: DeliverySummary): Promise<string> {
    const { ids } = await this.replayAll([original], true);
    if (!ids[0]) throw notFound('delivery'); // purged since it was read
    return ids[0];
  }

  /** Every failed delivery in the filter, replayed once per event even if it failed several times. */
  async replayFailed(filter: DeliveryFilter): Promise<string[]> {
    const ids: string[] = [];
    const seenEvents = new Set<string>();
    // Once a hand-over fails, the rest are only recorded: the request stays short, and the sweep hands them over.
    let handingOver = true;
    let after: PageCursor | undefined;
    do {
      const page = await this.log.list({ ...filter, status: 'failed' }, PAGE, after);
      const originals = page.items.filter((delivery) => {
        if (seenEvents.has(delivery.eventId)) return false;
        seenEvents.add(delivery.eventId);
        return true;
      });
      const replayed = await this.replayAll(originals, handingOver);
      ids.push(...replayed.ids);
      handingOver &&= replayed.handedOver;
      after = page.next;
    } while (after);
    return ids;
  }

  /**
   * Records a replay of each, then (when `handOver`) hands them over together: a hand-over
   * per shard and epoch, not per delivery. Recorded, a replay is accepted: if its hand-over
   * fails, the sweep of stranded deliveries hands it over (1,000 a minute), so the caller is
   * not told to try again (a retry would record, and deliver, a second replay).
   */
  private async replayAll(originals: DeliverySummary[], handOver: boolean): Promise<{ ids: string[]; handedOver: boolean }> {
    const replays: HandOver[] = [];
    const trace = activeTraceparent();
    for (const original of originals) {
      const now = Date.now();
      const id = await this.events.recordReplay(original, now);
      // Not when the original was purged since it was read: nothing is left to replay.
      if (id) replays.push({ id, eventId: original.eventId, installationId: original.installationId, createdAt: now, ...(trace && { trace }) });
    }
    const handedOver =
      handOver &&
      (await this.ingest.handOverRecorded(replays).then(
        () => true,
        (err: Error) => (this.logger.warn({ err: err.message, replays: replays.length }, 'replays recorded but not handed over yet; the stranded sweep hands them over'), false),
      ));
    return { ids: replays.map((replay) => replay.id), handedOver };
  }
}
