import assert from 'node:assert/strict';
import { webhookGuard } from '../src/net/guards';
import { PlatformPorts } from '../src/net/platform-ports';
import { createApp } from '../src/api/app';
import { buildApiDeps } from '../src/api/deps';
import { createIntegrationRuntime } from '../src/isolates';
import { TestPlatform } from './support/platform';
import { createLogger } from '../src/logger';
import { EncryptionCodec, generateEncryptionKey } from '../src/temporal/codec';
import { temporal } from '@temporalio/proto';
import { installationWorkflowId } from '../src/contracts/installation';

describe('GET /openapi.json and the system routes', function () {
  const platform = new TestPlatform(__filename);
  before(() => platform.start());
  after(() => platform.stop());

  it('is a valid OpenAPI 3.1 document', async function () {
    const answer = await platform.http('GET', '/openapi.json');
    assert.equal(answer.status, 200);
    assert.equal(answer.body.openapi, '3.1.0');
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const result = await new Validator().validate(answer.body);
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
  });

  it('describes every registered route, and only those', async function () {
    const doc = (await platform.http('GET', '/openapi.json')).body;
    const { routes } = createApp(
      buildApiDeps({
        client: platform.client,
        taskQueue: 'unused',
        baseUrl: 'http://x',
        adminToken: 'x',
        webhookGuard: webhookGuard(false, new PlatformPorts()),
        encryptionKey: generateEncryptionKey(),
        codec: platform.parts.codec,
        stores: platform.stores,
        runtime: createIntegrationRuntime({ client: platform.client, encryptionKey: generateEncryptionKey(), baseUrl: 'http://x', egressGuard: webhookGuard(false, new PlatformPorts()), platformPorts: new PlatformPorts() }).runtime,
        ingest: platform.parts.ingest,
        logger: createLogger('silent'),
        codecTrustsLoopback: false,
        codecCorsOrigins: [],
      }),
    );
    const registered = routes.router.stack.filter((layer) => !String(layer.path).endsWith('/*path')).flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${String(layer.path).replace(/:([A-Za-z]+)/g, '{$1}')}`)).sort();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`)).sort();
    assert.deepEqual(documented, registered);
    for (const route of ['post /v1/events', 'post /v1/events/batch', 'get /v1/deliveries', 'get /v1/deliveries/{id}', 'post /v1/deliveries/{id}/replay', 'post /v1/deliveries/replay', 'post /v1/installations/{id}/signing-secret/rotate', 'post /codec/decode']) {
      assert.ok(documented.includes(route), route);
    }
  });

  it('GET /healthz and /readyz answer 200 while Temporal and the log answer; /livez always', async function () {
    for (const path of ['/healthz', '/readyz']) assert.deepEqual((await platform.http('GET', path)).body, { status: 'ok', checks: { temporal: 'ok', database: 'ok', keys: 'ok' } });
    assert.deepEqual((await platform.http('GET', '/livez')).body, { status: 'ok' });
  });

  it('the codec endpoint decodes what the workers encrypted, for loopback callers', async function () {
    const codec = new EncryptionCodec(process.env.TEST_ENCRYPTION_KEY!);
    const [encoded] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"secret":"whsec_x"}') }]);
    const payload = { metadata: Object.fromEntries(Object.entries(encoded!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), data: Buffer.from(encoded!.data!).toString('base64') };
    assert.equal(Buffer.from(payload.metadata.encoding!, 'base64').toString(), 'binary/encrypted');
    const answer = await platform.http('POST', '/codec/decode', { body: { payloads: [payload] } });
    assert.equal(answer.status, 200);
    assert.equal(Buffer.from(answer.body.payloads[0].data, 'base64').toString(), '{"secret":"whsec_x"}');
    const tampered = { ...payload, data: Buffer.from('garbage').toString('base64') };
    const refused = await platform.http('POST', '/codec/decode', { body: { payloads: [tampered] } });
    assert.equal(refused.status, 400);
    assert.match(refused.body.message, /^cannot decode payloads/);
  });

  it('histories hold no signing secret in clear: every payload is encrypted', async function () {
    const tenant = await platform.tenant();
    const hook = await platform.webhook(tenant.token, { org: tenant.org }, 'https://8.8.8.8/hook', { space_content_updated: true });
    const raw = await platform.client.workflowService.getWorkflowExecutionHistory({ namespace: platform.namespace, execution: { workflowId: installationWorkflowId(hook.id) } });
    const started = raw.history!.events![0]!.workflowExecutionStartedEventAttributes!;
    const [input] = started.input!.payloads!;
    assert.equal(Buffer.from(input!.metadata!.encoding!).toString(), 'binary/encrypted');
    const everything = Buffer.from(temporal.api.history.v1.History.encode(raw.history!).finish());
    assert.ok(everything.length > 1000);
    assert.equal(everything.includes(hook.secret), false, 'the secret stands in clear');
    assert.equal(everything.includes('whsec_'), false);
  });

  it('unknown routes answer 404 in the error format', async function () {
    assert.deepEqual((await platform.http('GET', '/v2/nothing')).body, { error: 'not_found', message: 'route GET /v2/nothing not found', details: [] });
  });
});
