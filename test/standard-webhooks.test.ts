import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { SIGNATURE_HEADER, verifySignature, verifyStandardSignature } from '../src/webhooks/signature';
import { pythonVenv } from './support/python-venv';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver, type ReceivedRequest } from './support/receiver';

/** The specification's Python library, pinned like every test tool. */
const PYTHON_LIBRARY_VERSION = '1.1.0';

/** Verifies with Python's standardwebhooks, as a receiver in Python would: answers what `verify` said. */
async function verifiedInPython(secret: string, request: ReceivedRequest): Promise<string> {
  const venv = await pythonVenv('standardwebhooks', PYTHON_LIBRARY_VERSION);
  const script = [
    'import json, sys',
    'from standardwebhooks.webhooks import Webhook',
    'given = json.load(sys.stdin)',
    'try:',
    '    payload = Webhook(given["secret"]).verify(given["body"], given["headers"])',
    '    print("verified " + payload["eventId"])',
    'except Exception as err:',
    '    print("refused: " + str(err))',
  ].join('\n');
  const child = promisify(execFile)(path.join(venv, 'bin', 'python'), ['-c', script]);
  child.child.stdin!.end(JSON.stringify({ secret, body: request.body, headers: request.headers }));
  return (await child).stdout.trim();
}

describe('Standard Webhooks signatures (signature_headers: standard)', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver(() => ({ status: 200 }));
  let tenant: { org: string; token: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start(), pythonVenv('standardwebhooks', PYTHON_LIBRARY_VERSION)]);
    tenant = await platform.tenant();
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  /** Sends an event to `space` and answers the receiver's request of it. */
  async function delivered(space: string): Promise<ReceivedRequest> {
    const { body } = await platform.ingest(spaceEvent(tenant.org, space));
    const eventId: string = body.eventId;
    return waitFor(async () => receiver.requests.find((request) => JSON.parse(request.body).eventId === eventId), 30_000, `${eventId} at the receiver`);
  }

  it('adds webhook-id (the eventId), webhook-timestamp and webhook-signature, which the specification’s npm and PyPI libraries verify; X-Platform-Signature stays', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'std' }, receiver.url, { space_content_updated: true, signature_headers: 'standard' } as never);
    const request = await delivered('std');
    const eventId = JSON.parse(request.body).eventId;
    assert.equal(request.headers['webhook-id'], eventId);
    assert.ok(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
    assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
    assert.equal((new Webhook(hook.secret).verify(request.body, request.headers as Record<string, string>) as { eventId: string }).eventId, eventId);
    assert.equal(await verifiedInPython(hook.secret, request), `verified ${eventId}`);
    assert.equal(verifySignature(request.headers[SIGNATURE_HEADER.toLowerCase()] as string, request.body, hook.secret).valid, true);
    // The platform's own check of the scheme (the bench's receiver checks svix-server's with it) agrees with the libraries.
    const standard = (body: string) => verifyStandardSignature({ id: request.headers['webhook-id'] as string, timestamp: request.headers['webhook-timestamp'] as string, signature: request.headers['webhook-signature'] as string }, body, [hook.secret]);
    assert.equal(standard(request.body), true);
    assert.equal(standard(`${request.body} `), false);
    // A body changed on the way is refused by both libraries.
    const tampered = { ...request, body: request.body.replace(eventId, `${eventId}x`) };
    assert.throws(() => new Webhook(hook.secret).verify(tampered.body, request.headers as Record<string, string>));
    assert.match(await verifiedInPython(hook.secret, tampered), /^refused/);
  });

  it('signs with both secrets during a rotation: a receiver holding either verifies with either library', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'rot' }, receiver.url, { space_content_updated: true, signature_headers: 'standard' } as never);
    const rotated = await platform.http('POST', `/v1/installations/${hook.id}/signing-secret/rotate`, { token: tenant.token });
    assert.equal(rotated.status, 200);
    const request = await delivered('rot');
    assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2);
    const eventId = JSON.parse(request.body).eventId;
    for (const secret of [hook.secret, rotated.body.secret as string]) {
      assert.equal((new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as { eventId: string }).eventId, eventId);
      assert.equal(await verifiedInPython(secret, request), `verified ${eventId}`);
    }
  });

  it('is off by default (no webhook-* header), switched on by a configuration patch, and a value it does not know is a 400 naming the field', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'plain' }, receiver.url, { space_content_updated: true });
    const plain = await delivered('plain');
    assert.deepEqual(Object.keys(plain.headers).filter((name) => name.startsWith('webhook-')), []);
    const refused = await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { signature_headers: 'svix' } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.details[0].field, 'configuration.signature_headers');
    assert.match(refused.body.details[0].message, /platform, standard/);
    const patched = await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { signature_headers: 'standard' } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const standard = await delivered('plain');
    assert.doesNotThrow(() => new Webhook(hook.secret).verify(standard.body, standard.headers as Record<string, string>));
  });
});
