import type { DeliveryReads } from '../delivery-log/delivery-reads';
import type { EventRecords } from '../delivery-log/event-records';
import type { Delivery, DeliveryFilter, DeliverySummary, PageCursor } from '../delivery-log/types';
import { notFound } from './errors';
import type { IngestService } from '../ingest/ingest-service';
import { handOverAccepted } from '../delivery-log/hand-over';
import type { PageTokens } from './page-tokens';
import { activeTraceparent } from '../tracing';
import type { Logger } from '../logger';

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

  /**
   * A new delivery with the same body and eventId (`<eventId>:<installationId>:replay-<n>`),
   * recorded, then handed over (see handOverAccepted): the caller is not told to try again
   * if the hand-over fails (a retry would record, and deliver, a second replay).
   */
  async replay(original: DeliverySummary): Promise<string> {
    const trace = activeTraceparent();
    const [replay] = await this.events.recordReplays([original]);
    if (!replay) throw notFound('delivery'); // purged since it was read
    await handOverAccepted(this.ingest, [{ ...replay, ...(trace && { trace }) }], this.logger);
    return replay.id;
  }
}
