import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createLogger } from '../../src/logger';
import { DIRECTORY_WORKFLOW_ID, directoryQuery } from '../../src/workflows/directory';
import { waitFor, type TestPlatform } from './platform';
import { StartedParts } from '../../src/lifecycle';
import { startTestWorker } from './worker';

/**
 * The worker of a test platform started without one, run until stopped: tests that take
 * the engine's worker away bring it back with this.
 */
export async function runWorkerOf(platform: TestPlatform): Promise<{ stop(): Promise<void> }> {
  const started = new StartedParts(createLogger('warn'));
  const { running } = await startTestWorker(platform.parts, started);
  await untilWorkerAnswers(platform);
  return {
    async stop() {
      await started.stopAll();
      await running;
    },
  };
}

/** A worker of the platform in a process of its own (support/worker-process), once it polls: a test can SIGKILL or SIGTERM it. */
export function startWorkerProcess(platform: TestPlatform): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(__dirname, 'worker-process.js'), platform.namespace, platform.taskQueue, platform.databaseUrl, platform.api.url], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
}

/**
 * A file's tests against a platform started without a worker, whose worker runs in a
 * process of its own (a test may kill it and start another: `suite.worker`), with the
 * receivers given and a tenant: started before the tests, stopped after them.
 */
export function workerProcessSuite(platform: TestPlatform, receivers: { start(): Promise<unknown>; stop(): Promise<unknown> | void }[]) {
  const suite = {} as { worker: ChildProcess; tenant: { org: string; token: string } };
  before(async function () {
    await Promise.all([platform.start(), ...receivers.map((receiver) => receiver.start())]);
    suite.worker = await startWorkerProcess(platform);
    await untilWorkerAnswers(platform);
    suite.tenant = await platform.tenant();
  });
  after(async () => {
    suite.worker?.kill('SIGKILL');
    await Promise.all([platform.stop(), ...receivers.map((receiver) => receiver.stop())]);
  });
  return suite;
}

/** Kills the suite's worker with `signal`, once it has exited starts another; answers once it runs. */
export async function replaceWorker(platform: TestPlatform, suite: { worker: ChildProcess }, signal: NodeJS.Signals): Promise<void> {
  suite.worker.kill(signal);
  await new Promise((resolve) => suite.worker.once('exit', resolve));
  suite.worker = await startWorkerProcess(platform);
}

/**
 * Until the platform's worker answers a query. A fresh worker's first task (the
 * directory's replay) can outlast the API's 1.5 s deadline under the whole suite's load: a
 * query (safe to repeat, unlike a creation) warms it.
 */
export async function untilWorkerAnswers(platform: TestPlatform): Promise<void> {
  await waitFor(() => platform.client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(directoryQuery).then(() => true, () => undefined), 30_000, 'the worker to answer');
}
