import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createLogger } from '../../src/logger';
import { DIRECTORY_WORKFLOW_ID, directoryQuery } from '../../src/workflows/directory';
import { waitFor, type HttpAnswer, type TestPlatform } from './platform';
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
 * Until the platform's worker answers a query. A fresh worker's first task (the
 * directory's replay) can outlast the API's 1.5 s deadline under the whole suite's load: a
 * query (safe to repeat, unlike a creation) warms it.
 */
export async function untilWorkerAnswers(platform: TestPlatform): Promise<void> {
  await waitFor(() => platform.client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(directoryQuery).then(() => true, () => undefined), 30_000, 'the worker to answer');
}

/** Posts an event again after each refusal, as a client honouring Retry-After does, until it is accepted. */
export function postUntilAccepted(platform: TestPlatform, event: object, timeoutMs: number): Promise<HttpAnswer> {
  return waitFor(async () => {
    const answer = await platform.admin('POST', '/v1/events', event);
    return answer.status === 202 ? answer : undefined;
  }, timeoutMs, 'the retry to be accepted');
}
