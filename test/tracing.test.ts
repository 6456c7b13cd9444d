import assert from 'node:assert/strict';
import { startTracing, type Tracing } from '../src/tracing';
import { OtlpCollector, type CollectedSpan } from './support/otlp-collector';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import path from 'node:path';
import { install, publishExample } from './support/examples';

/**
 * OpenTelemetry traces exported over OTLP/HTTP to a collector in this process: one event
 * is followed from the API's request, through its ingest, the shard workflow and its
 * activity (Temporal's interceptors), to the receiver, which gets the attempt's traceparent.
 */
describe('traces from ingest to the receiver (OTLP)', function () {
  this.timeout(120_000);
  const collector = new OtlpCollector();
  const receiver = new ScriptedReceiver();
  let tracing: Tracing;
  let platform: TestPlatform;
  let eventId: string;
  let deliveryId: string;
  let tenant: { org: string; token: string };
  const spans = (name: string | RegExp, where: (span: CollectedSpan) => boolean = () => true) => collector.spans.filter((span) => (typeof name === 'string' ? span.name === name : name.test(span.name)) && where(span));
  const one = async (what: string, name: string | RegExp, where?: (span: CollectedSpan) => boolean) => waitFor(async () => spans(name, where)[0], 20_000, what);

  before(async function () {
    await Promise.all([collector.start(), receiver.start()]);
    tracing = startTracing({ url: collector.url, serviceName: 'platform-test' })!;
    platform = await new TestPlatform(__filename, { tracing }).start();
    tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'space-1' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'space-1', { eventId: `evt_traced_${Date.now()}` }));
    assert.equal(ingest.status, 202);
    eventId = ingest.body.eventId;
    deliveryId = ingest.body.deliveries[0];
    assert.equal((await platform.finalDelivery(deliveryId, tenant.token)).status, 'delivered');
    await tracing.processor.forceFlush();
  });
  after(async () => {
    await platform?.stop();
    await tracing?.shutdown();
    await Promise.all([collector.stop(), receiver.stop()]);
  });

  it('is off without an endpoint: nothing registered, nothing to shut down', function () {
    assert.equal(startTracing({ url: undefined, serviceName: 'x' }), undefined);
  });

  it('an event’s ingest span is a child of the API request that carried it', async function () {
    const ingest = await one('the ingest span', 'ingest event', (span) => span.attributes['event.id'] === eventId);
    const request = await one('the request span', 'POST /v1/events', (span) => span.spanId === ingest.parentSpanId);
    assert.equal(request.traceId, ingest.traceId);
    assert.equal(request.kind, 2 /* SERVER */);
    assert.equal(request.attributes['http.response.status_code'], 202);
    assert.equal(ingest.service, 'platform-test');
  });

  it('the flush that carried it to its shard links to it, and its hand-over signal reaches the workflow (client interceptor)', async function () {
    const ingest = await one('the ingest span', 'ingest event', (span) => span.attributes['event.id'] === eventId);
    const flush = await one('the flush span', 'ingest flush', (span) => span.links.some((link) => link.spanId === ingest.spanId && link.traceId === ingest.traceId));
    const signal = await one('the signal-with-start span', 'SignalWithStartWorkflow:deliveryEpochWorkflow', (span) => span.parentSpanId === flush.spanId);
    assert.equal(signal.traceId, flush.traceId);
    await one('the workflow’s signal handler span', 'HandleSignal:hand-over', (span) => span.traceId === signal.traceId);
  });

  it('the attempt continues the event’s trace, linked to the batch activity the workflow started', async function () {
    const ingest = await one('the ingest span', 'ingest event', (span) => span.attributes['event.id'] === eventId);
    const attempt = await one('the attempt span', 'webhook attempt', (span) => span.attributes['delivery.id'] === deliveryId);
    assert.equal(attempt.traceId, ingest.traceId);
    assert.equal(attempt.parentSpanId, ingest.spanId);
    assert.equal(attempt.attributes['http.response.status_code'], 200);
    assert.equal(attempt.attributes['delivery.status'], 'delivered');
    assert.equal(attempt.links.length, 1);
    const activity = await one('the activity span', 'RunActivity:attemptDeliveries', (span) => span.spanId === attempt.links[0]!.spanId);
    assert.ok(activity.links.some((link) => link.spanId === ingest.spanId && link.traceId === ingest.traceId), 'the batch links to every event it carried');
    const scheduled = await one('the workflow’s activity span', 'StartActivity:attemptDeliveries', (span) => span.spanId === activity.parentSpanId);
    assert.equal(scheduled.traceId, activity.traceId);
  });

  it('the receiver gets the attempt’s traceparent', async function () {
    const attempt = await one('the attempt span', 'webhook attempt', (span) => span.attributes['delivery.id'] === deliveryId);
    assert.equal(receiver.requests.length, 1);
    assert.equal(receiver.requests[0]!.headers.traceparent, `00-${attempt.traceId}-${attempt.spanId}-01`);
  });

  it('integration code’s log lines carry the trace of the request that called it', async function () {
    const name = await publishExample(platform, tenant, path.join(__dirname, '..', '..', 'test', 'fixtures', 'logbook'));
    const installation = await install(platform, tenant, name);
    assert.equal(await (await fetch(`${installation.urls.publicEndpoint}/hello`)).text(), 'hi');
    const line = await waitFor(async () => {
      const { items } = (await platform.http('GET', `/v1/integrations/${name}/logs?installation=${installation.id}`, { token: tenant.token })).body;
      return items.find((each: any) => each.kind === 'fetch' && each.message.includes('hello from the endpoint'));
    }, 30_000, 'the endpoint’s line');
    await tracing.processor.forceFlush();
    const request = await one('the public endpoint’s request span', /\/public/, (span) => span.traceId === line.traceId);
    assert.equal(request.attributes['http.request.method'], 'GET');
  });
});
