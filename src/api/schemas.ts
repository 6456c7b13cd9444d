import { DELIVERY_STATUSES } from '../delivery-log/types';
import { LISTED_INSTALLATION_STATUSES, PAUSE_REASONS } from '../installations/types';
import { OPERATION_KINDS } from '../delivery-log/types';
import { ID_PATTERN } from '../ids';
import type { SchemaObject } from 'ajv';

/** Shapes of DESIGN.md §4, shared by request parsing and the OpenAPI document. */
const id = { type: 'string', minLength: 1, maxLength: 200, pattern: ID_PATTERN } as const;

export const errorSchema: SchemaObject = {
  type: 'object',
  required: ['error', 'message', 'details'],
  properties: {
    error: { type: 'string' },
    message: { type: 'string' },
    details: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
  },
};

export const targetSchema: SchemaObject = {
  type: 'object',
  required: ['org'],
  additionalProperties: false,
  properties: { org: id, space: id, site: id },
};

export const configurationSchema: SchemaObject = { type: 'object' };

const pauseSchema: SchemaObject = {
  type: 'object',
  description: 'Why and since when it is paused: by a member, or by the platform (receiver_failing, receiver_gone; new events are then held)',
  properties: { reason: { enum: [...PAUSE_REASONS] }, at: { type: 'string' }, troubleSince: { type: 'string', description: 'When the failures in a row began' } },
};

export const installationSchema: SchemaObject = {
  type: 'object',
  required: ['id', 'integration', 'target', 'status', 'configuration', 'urls'],
  properties: {
    id: { type: 'string' },
    integration: { type: 'string' },
    target: targetSchema,
    status: { enum: [...LISTED_INSTALLATION_STATUSES] },
    configuration: configurationSchema,
    version: { type: 'integer', description: 'The integration version it runs (none for webhooks)' },
    pinned: { type: 'boolean', description: 'Kept on its version: publishes do not move it' },
    urls: { type: 'object', properties: { publicEndpoint: { type: 'string' } } },
    pause: pauseSchema,
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
  },
};

const statusCounts = Object.fromEntries(['delivered', 'failed', 'pending', 'held', 'skipped'].map((status) => [status, { type: 'integer' }]));

export const healthSchema: SchemaObject = {
  type: 'object',
  required: ['consecutiveFailures', 'last24h'],
  properties: {
    consecutiveFailures: { type: 'integer', description: 'Deliveries failed by the receiver since the last one delivered' },
    failingSince: { type: 'string', description: 'When the first of them failed' },
    lastSuccessAt: { type: 'string' },
    lastFailure: { type: 'object', properties: { at: { type: 'string' }, statusCode: { type: 'integer' }, error: { type: 'string' } } },
    failingNow: {
      type: 'object',
      description: 'Present while the receiver fails every attempt: slow (each timed out) or fast (refused, 5xx, 429), and since when; from 10 s on, new events are held (heldReason receiver_failing) until it answers again',
      properties: { kind: { enum: ['slow', 'fast'] }, since: { type: 'string' } },
    },
    last24h: {
      type: 'object',
      description: 'Deliveries recorded in the 24 hours up to the current one',
      properties: {
        ...statusCounts,
        successRate: { type: ['number', 'null'], description: 'delivered / (delivered + failed)' },
        latencyMs: { type: ['object', 'null'], description: "Attempts' duration, of the latest 1,000 at most", properties: { p50: { type: 'integer' }, p95: { type: 'integer' }, attempts: { type: 'integer' } } },
        hourly: { type: 'array', description: 'The same by hour, oldest first', items: { type: 'object', properties: { hour: { type: 'string' }, ...statusCounts } } },
      },
    },
    pause: pauseSchema,
  },
};

export const operationSchema: SchemaObject = {
  type: 'object',
  required: ['id', 'kind', 'installationId', 'status', 'total', 'done', 'failed', 'left'],
  properties: {
    id: { type: 'string' },
    kind: { enum: [...OPERATION_KINDS] },
    installationId: { type: 'string' },
    status: { enum: ['running', 'done', 'cancelled', 'failed'], description: 'failed: its workflow ended without finishing it (terminated from the Temporal UI, timed out); what it did stays done' },
    total: { type: 'integer', description: 'Counted when it began' },
    done: { type: 'integer' },
    failed: { type: 'integer', description: 'Not handled: purged since it began' },
    left: { type: 'integer' },
    request: { type: 'object' },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
    finishedAt: { type: 'string' },
  },
};

export const createInstallationSchema: SchemaObject = {
  type: 'object',
  required: ['target'],
  additionalProperties: false,
  properties: { target: targetSchema, configuration: configurationSchema, installLink: { type: 'string' } },
};

export const orgSchema: SchemaObject = {
  type: 'object',
  required: ['id', 'subdomain', 'title'],
  additionalProperties: false,
  properties: { id: { type: 'string' }, subdomain: { type: 'string' }, title: { type: 'string' }, portalFrameAncestors: { type: 'array', items: { type: 'string' }, readOnly: true, description: 'Set with PUT /v1/orgs/{id}/portal-frame-ancestors' } },
};

export const userSchema: SchemaObject = {
  type: 'object',
  required: ['id', 'orgs'],
  additionalProperties: false,
  properties: { id: { type: 'string' }, orgs: { type: 'array', items: { type: 'string' } } },
};

const workflowLinkSchema: SchemaObject = {
  type: 'object',
  description: 'A delivery shard run that made attempts; url opens it in the Temporal UI (PLATFORM_TEMPORAL_UI_URL)',
  required: ['workflowId', 'runId'],
  properties: { workflowId: { type: 'string' }, runId: { type: 'string' }, url: { type: 'string' } },
};

export const attemptSchema: SchemaObject = {
  type: 'object',
  required: ['attempt', 'startedAt', 'durationMs'],
  properties: {
    attempt: { type: 'integer' },
    startedAt: { type: 'string' },
    durationMs: { type: 'number' },
    url: { type: 'string' },
    statusCode: { type: 'integer' },
    error: { type: 'string' },
    errorMessage: { type: 'string' },
    responseBody: { type: 'string' },
    nextDelayMs: { type: 'number' },
    workflow: workflowLinkSchema,
  },
};

export const deliverySchema: SchemaObject = {
  type: 'object',
  required: ['id', 'eventId', 'installationId', 'eventType', 'status', 'createdAt'],
  properties: {
    id: { type: 'string' },
    eventId: { type: 'string' },
    installationId: { type: 'string' },
    eventType: { type: 'string' },
    url: { type: 'string' },
    organizationId: { type: 'string' },
    status: { enum: [...DELIVERY_STATUSES] },
    createdAt: { type: 'string' },
    completedAt: { type: 'string' },
    skipReason: { type: 'string' },
    failureReason: { type: 'string' },
    heldReason: { type: 'string', description: 'receiver_failing: held (its installation active) while its receiver fails every attempt; it goes out on its own once the receiver answers again' },
    replayOf: { type: 'string' },
    attemptCount: { type: 'integer' },
    workflow: { ...workflowLinkSchema, description: 'The delivery shard run that made its last attempt; url opens it in the Temporal UI (PLATFORM_TEMPORAL_UI_URL)' },
    payload: { type: 'string', description: 'The body as its receiver got it (every attempt sends these bytes); in a delivery read alone, not in lists' },
    attempts: { type: 'array', items: attemptSchema },
  },
};

export const listOf = (items: SchemaObject): SchemaObject => ({
  type: 'object',
  required: ['items'],
  properties: { items: { type: 'array', items }, nextPageToken: { type: 'string' } },
});

export const ingestAnswerSchema: SchemaObject = {
  type: 'object',
  required: ['eventId', 'deliveries'],
  properties: { eventId: { type: 'string' }, deliveries: { type: 'array', items: { type: 'string' } } },
};

/** Each item of a batch ingest: its answer, or the error body of DESIGN.md §4 for that item. */
export const batchIngestAnswerSchema: SchemaObject = {
  type: 'object',
  required: ['results'],
  properties: {
    results: {
      type: 'array',
      items: {
        oneOf: [ingestAnswerSchema, { type: 'object', required: ['error', 'message', 'details'], properties: { error: { type: 'string' }, message: { type: 'string' }, details: { type: 'array' } } }],
      },
    },
  },
};

export const bulkReplaySchema: SchemaObject = {
  type: 'object',
  required: ['installation', 'status'],
  additionalProperties: false,
  properties: {
    dryRun: { type: 'boolean', description: 'Only count what it would replay (200 {count}): nothing starts' },
    installation: id,
    status: { const: 'failed' },
    since: { type: 'string', format: 'date-time' },
    until: { type: 'string', format: 'date-time' },
  },
};

export const secretSchema: SchemaObject = {
  type: 'object',
  required: ['secret'],
  properties: { secret: { type: 'string' }, createdAt: { type: 'string' }, previousExpiresAt: { type: 'string', description: 'Until when the secret it replaced is still signed with, after a rotation' } },
};
