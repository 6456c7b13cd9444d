import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { PageTokens } from './page-tokens';
import { WorkflowNotFoundError } from '@temporalio/common';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { deliveryId } from '../ids';
import { DeliveryStatusKey, EventIdKey, EventTypeKey, InstallationIdKey, OrganizationIdKey } from '../temporal/search-attributes';
import { deliveryBodyQuery, deliveryQuery, deliverySearchAttributes, deliveryWorkflow, type Delivery, type DeliveryInput, type DeliveryStatus } from '../workflows/delivery';

export interface DeliveryFilter {
  orgs: string[];
  installation?: string;
  status?: DeliveryStatus;
  eventId?: string;
  since?: string;
  until?: string;
}

export type DeliverySummary = Omit<Delivery, 'attempts' | 'url'>;

const SAFE = /^[A-Za-z0-9_.:-]+$/;
const quote = (value: string): string => {
  if (!SAFE.test(value)) throw new Error(`unsafe visibility value ${value}`);
  return `'${value}'`;
};

/**
 * A visibility query over delivery workflows; values are checked against SAFE, never
 * spliced raw. Times come normalized by isoTime (the routes check them).
 */
export function visibilityQuery(filter: DeliveryFilter): string {
  const clauses = [`WorkflowType = 'deliveryWorkflow'`, `${OrganizationIdKey.name} IN (${filter.orgs.map(quote).join(', ')})`];
  if (filter.installation) clauses.push(`${InstallationIdKey.name} = ${quote(filter.installation)}`);
  if (filter.status) clauses.push(`${DeliveryStatusKey.name} = ${quote(filter.status)}`);
  if (filter.eventId) clauses.push(`${EventIdKey.name} = ${quote(filter.eventId)}`);
  if (filter.since) clauses.push(`StartTime >= ${quote(filter.since)}`);
  if (filter.until) clauses.push(`StartTime <= ${quote(filter.until)}`);
  return clauses.join(' AND ');
}

function summaryOf(info: WorkflowExecutionInfo): DeliverySummary {
  const attributes = info.typedSearchAttributes;
  return {
    id: info.workflowId,
    eventId: attributes.get(EventIdKey) ?? '',
    installationId: attributes.get(InstallationIdKey) ?? '',
    organizationId: attributes.get(OrganizationIdKey) ?? '',
    eventType: attributes.get(EventTypeKey) ?? '',
    status: (attributes.get(DeliveryStatusKey) ?? 'pending') as DeliveryStatus,
    createdAt: info.startTime.toISOString(),
    completedAt: info.closeTime?.toISOString(),
  };
}

/** Deliveries are workflows: listed through visibility, read by query or result, replayed as new workflows. */
export class DeliveryStore {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly pageTokens: PageTokens,
  ) {}

  async list(filter: DeliveryFilter, pageSize: number, pageToken?: string): Promise<{ items: DeliverySummary[]; nextPageToken?: string }> {
    if (filter.orgs.length === 0) return { items: [] };
    const response = await this.client.workflowService.listWorkflowExecutions({
      namespace: this.client.options.namespace,
      query: visibilityQuery(filter),
      pageSize,
      nextPageToken: pageToken ? this.pageTokens.open(pageToken) : undefined,
    });
    const items = await Promise.all(
      response.executions.map(async (raw) => summaryOf(await executionInfoFromRaw(raw, this.client.options.loadedDataConverter, raw, this.client.options.namespace))),
    );
    const next = response.nextPageToken?.length ? this.pageTokens.seal(Buffer.from(response.nextPageToken)) : undefined;
    return { items, nextPageToken: next };
  }

  /** Undefined when there is no such delivery. */
  async get(id: string): Promise<Delivery | undefined> {
    const handle = this.client.workflow.getHandle<typeof deliveryWorkflow>(id);
    let description;
    try {
      description = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
    if (description.type !== 'deliveryWorkflow') return undefined;
    return description.status.name === 'COMPLETED' ? handle.result() : handle.query(deliveryQuery);
  }

  /** Starts a delivery's workflow; false when one with its id exists already (idempotent). */
  async start(input: DeliveryInput): Promise<boolean> {
    try {
      await this.client.workflow.start(deliveryWorkflow, {
        workflowId: input.id,
        taskQueue: this.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: deliverySearchAttributes(input, 'pending'),
      });
      return true;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw err;
    }
  }

  /** A new delivery with the same body and eventId: `<eventId>:<installationId>:replay-<n>`. */
  async replay(original: Delivery): Promise<string> {
    const body = await this.client.workflow.getHandle(original.id).query(deliveryBodyQuery);
    for (let n = 1; ; n++) {
      const input: DeliveryInput = {
        id: deliveryId(original.eventId, original.installationId, n),
        eventId: original.eventId,
        installationId: original.installationId,
        organizationId: original.organizationId,
        eventType: original.eventType,
        body,
        url: original.url,
        replayOf: original.id,
      };
      if (await this.start(input)) return input.id;
    }
  }
}
