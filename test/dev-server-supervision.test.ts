import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import pino from 'pino';
import { childrenOf, isAlive } from '../src/system/procfs';
import { SupervisedDevServer } from '../src/temporal/supervised-dev-server';
import { waitFor } from './support/platform';
import { answer, comm, embedded, healthy } from './support/embedded';

describe('the embedded default supervises its dev server', function () {
  this.timeout(240_000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-supervised-'));
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  let main: ChildProcess;
  let base = '';
  let ports: { temporal: number };
  const devServer = () => childrenOf(main.pid!).find((pid) => isAlive(pid) && comm(pid) === 'temporal');

  /** Kills the dev server; answers its pid. */
  async function killDevServer(): Promise<number> {
    const pid = await waitFor(async () => devServer(), 60_000, 'a dev server');
    process.kill(pid, 'SIGKILL');
    await waitFor(async () => (isAlive(pid) ? undefined : true), 10_000, 'the dev server to die');
    return pid;
  }

  before(async () => ({ main, base, ports } = await embedded(dataDir, adminToken)));
  after(() => main?.kill('SIGKILL'));

  it('restarts it when it dies: the API answers 503 meanwhile and recovers by itself, on the same data; /livez stays 200', async function () {
    const org = `org-${randomBytes(3).toString('hex')}`;
    assert.equal((await answer(base, 'POST', '/v1/orgs', adminToken, { id: org, subdomain: org, title: 'Kept' })).status, 201);
    const killed = await killDevServer();
    const during = await answer(base, 'GET', '/livez');
    assert.equal(during.status, 200, 'a dev server being restarted is no reason to restart the process');
    await healthy(base, 60_000);
    assert.notEqual(devServer(), killed, 'a new dev server');
    // The organization made before: its directory is there, and a worker takes the creation.
    // A 503 says "try again" (the new dev server slow to answer on a busy machine: CI run 71); anything else is the answer.
    // Each try a new id: one that timed out may still have been created.
    let tries = 0;
    const joined = await waitFor(async () => {
      const tried = await answer(base, 'POST', '/v1/users', adminToken, { id: `${org}-u${(tries += 1)}`, orgs: [org] });
      return tried.status === 503 ? undefined : tried;
    }, 60_000, 'the user created', 1000);
    assert.equal(joined.status, 201, JSON.stringify(joined.body));
    const hook = await answer(base, 'POST', '/v1/integrations/webhook/installations', joined.body.token, { target: { org, space: 's' }, configuration: { webhook_url: 'https://example.com/hook', space_content_updated: true } });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
  });

  it('answers /livez 503 once restarts keep failing (its port taken by another process), and 200 again once one succeeds', async function () {
    // Its port taken the moment it is free (a restart that came first is killed again): every restart fails.
    const squatter = net.createServer((socket) => socket.destroy());
    for (let taken = false; !taken; ) {
      await killDevServer();
      taken = await new Promise<boolean>((resolve) => {
        squatter.once('error', () => resolve(false));
        squatter.listen(ports.temporal, '127.0.0.1', () => resolve(true));
      });
    }
    try {
      const dead = await waitFor(async () => {
        const seen = await answer(base, 'GET', '/livez');
        return seen.status === 503 ? seen : undefined;
      }, 90_000, '/livez to fail', 500);
      assert.match(dead.body.message, /the Temporal dev server died and \d+ restarts in a row failed/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    // Temporal may answer /healthz a moment before the supervisor has seen its restart succeed.
    await healthy(base, 90_000);
    await waitFor(async () => ((await answer(base, 'GET', '/livez')).status === 200 ? true : undefined), 30_000, '/livez to recover', 200);
  });
});

describe('the embedded default’s first start of its dev server', function () {
  this.timeout(120_000);
  const logger = pino({ level: 'silent' });

  /** A CLI that panics as the real one does when a port it picked is taken, `panics` times, then runs the real one. */
  function panickingCli(panics: number): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-panicking-'));
    const cli = path.join(dir, 'temporal');
    const count = path.join(dir, 'count');
    writeFileSync(
      cli,
      `#!/bin/sh\nn=$(cat '${count}' 2>/dev/null || echo 0)\necho $((n + 1)) > '${count}'\nif [ "$n" -lt ${panics} ]; then\n  echo 'panic: listen tcp 127.0.0.1:43123: bind: address already in use' >&2\n  echo 'goroutine 1 [running]:' >&2\n  echo '\tmain.main()' >&2\n  exit 2\nfi\nexec '${process.env.TEMPORAL_CLI_RESOLVED}' "$@"\n`,
      { mode: 0o755 },
    );
    return cli;
  }

  it('starts it again when it exits before serving (a port it picked for itself taken meanwhile)', async function () {
    const server = await SupervisedDevServer.start({ cliPath: panickingCli(2), namespace: 'default' }, logger);
    try {
      const connection = await Connection.connect({ address: server.address });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
    } finally {
      await server.stop();
    }
  });

  it('gives up after five tries, saying its panic rather than only the stack that followed', async function () {
    await assert.rejects(SupervisedDevServer.start({ cliPath: panickingCli(5), namespace: 'default' }, logger), /exited with code 2 before serving: panic: listen tcp 127\.0\.0\.1:43123: bind: address already in use/);
  });
});
