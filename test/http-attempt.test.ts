import assert from 'node:assert/strict';
import { createAgents, postOnce } from '../src/activities/http-attempt';
import { webhookGuard } from '../src/net/guards';
import { ScriptedReceiver } from './support/receiver';
import { waitFor } from './support/platform';
import { testPlatformPorts } from './support/settings';

describe('one webhook POST (the attempt batches’ client)', function () {
  it('gives each installation sockets of its own on a shared host: one whose URL hangs does not make another’s requests wait until they time out unsent', async function () {
    // One host, as a SaaS's webhook host is for many installations: /hang never answers.
    const receiver = await new ScriptedReceiver((_n, request) => (request.url.endsWith('/hang') ? { status: 200, delayMs: 60_000 } : { status: 200 })).start();
    const agents = createAgents(2);
    const options = { guard: webhookGuard(true, testPlatformPorts()), agents, timeoutMs: 3000 };
    try {
      // Installation A's URL hangs, and its attempts take every socket its pool may have.
      const hanging = [1, 2, 3].map(() => postOnce({ url: `${receiver.url}/hang`, headers: {}, body: '{}', pool: 'ins_a' }, options));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      const other = await postOnce({ url: `${receiver.url}/ok`, headers: {}, body: '{}', pool: 'ins_b' }, options);
      const hangsSent = receiver.requests.filter((request) => request.url.endsWith('/hang')).length;
      assert.equal(other.statusCode, 200, JSON.stringify(other));
      assert.ok(Date.now() - started < 1000, `installation B waited ${Date.now() - started} ms`);
      assert.deepEqual((await Promise.all(hanging)).map((outcome) => outcome.error), ['timeout', 'timeout', 'timeout']);
      // Once A's first two time out, its third may take a freed socket just before its own timeout.
      assert.equal(hangsSent, 2, 'while B was answered, A’s third waited in its own pool, unsent');
    } finally {
      agents.http.destroy();
      await receiver.stop();
    }
  });
  it('tells a request interrupted before it went out (no attempt: the receiver has nothing) from one interrupted while its answer was awaited', async function () {
    const receiver = await new ScriptedReceiver(() => ({ status: 200, delayMs: 60_000 })).start();
    const agents = createAgents();
    const options = { guard: webhookGuard(true, testPlatformPorts()), agents, timeoutMs: 30_000 };
    try {
      const before = new AbortController();
      before.abort();
      const unsent = await postOnce({ url: `${receiver.url}/a`, headers: {}, body: '{"n":1}' }, { ...options, signal: before.signal });
      assert.deepEqual([unsent.error, unsent.unsent], ['interrupted', true]);
      const during = new AbortController();
      const awaited = postOnce({ url: `${receiver.url}/b`, headers: {}, body: '{"n":2}' }, { ...options, signal: during.signal });
      await waitFor(async () => (receiver.requests.length === 1 ? true : undefined), 10_000, 'the request at the receiver');
      during.abort();
      const interrupted = await awaited;
      assert.deepEqual([interrupted.error, interrupted.unsent], ['interrupted', undefined]);
      assert.deepEqual(receiver.requests.map((request) => request.url.split('/').pop()), ['b']);
    } finally {
      agents.http.destroy();
      await receiver.stop();
    }
  });
});
