import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { findOrBuildTemporalCli } from '../src/temporal/cli-binary';
import { startDevServer } from '../src/temporal/dev-server';
import { installTemporalRuntime, temporalRuntimeLogger } from '../src/temporal/runtime-logger';
import { createLogger } from '../src/logger';
import { treeCpuSecondsOf } from '../src/system/procfs';
import { percentile } from './load';
import { round } from './drive';
import { floorSignal, type floorWorkflow } from './floor-workflow';

/**
 * Temporal's own floor under the platform's one-at-a-time figures: a dev server started as
 * the embedded default starts it (SQLite file, same dynamic config: eager activities on),
 * a worker of this SDK, and a workflow that runs one activity for each signal, nothing
 * else. Signals one at a time, each waited for: how long the signal's call takes (what an
 * ingest's 202 waits for at least) and how long until the activity runs (what an event
 * waits at least before its attempt), with the dev server's CPU for each.
 */
export async function temporalFloor(n: number) {
  // The bench's only worker: the SDK's logs at warn, as the platform's.
  installTemporalRuntime(createLogger('warn'));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-floor-'));
  const server = await startDevServer({ cliPath: await findOrBuildTemporalCli(process.env), namespace: 'default', dbFile: path.join(dataDir, 'temporal.db') });
  const connection = await Connection.connect({ address: server.address });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const ran = new Map<number, () => void>();
  try {
    const client = new Client({ connection });
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue: 'floor',
      workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./floor-workflow'), logger: temporalRuntimeLogger(createLogger('warn')) }),
      activities: { reached: async (i: number) => ran.get(i)?.() },
    });
    const running = worker.run();
    const signalMs: number[] = [];
    const toActivityMs: number[] = [];
    const signal = (i: number) => client.workflow.signalWithStart<typeof floorWorkflow, [number]>('floorWorkflow', { workflowId: 'floor', taskQueue: 'floor', signal: floorSignal, signalArgs: [i] });
    // The workflow started and its first tasks done: what follows is the steady state.
    for (let i = -20; i < 0; i++) {
      const reached = new Promise<void>((resolve) => ran.set(i, resolve));
      await signal(i);
      await reached;
    }
    const cpuBefore = treeCpuSecondsOf(server.pid!) ?? 0;
    for (let i = 0; i < n; i++) {
      const reached = new Promise<number>((resolve) => ran.set(i, () => resolve(performance.now())));
      const started = performance.now();
      await signal(i);
      signalMs.push(performance.now() - started);
      toActivityMs.push((await reached) - started);
    }
    const serverCpuMs = (((treeCpuSecondsOf(server.pid!) ?? 0) - cpuBefore) * 1000) / n;
    worker.shutdown();
    await running;
    return {
      signals: n,
      signalMs: { p50: percentile(signalMs, 50), p99: percentile(signalMs, 99) },
      signalToActivityMs: { p50: percentile(toActivityMs, 50), p99: percentile(toActivityMs, 99) },
      oneAtATimePerSCeiling: round(1000 / percentile(signalMs, 50)),
      devServerCpuMsPerSignal: round(serverCpuMs, 2),
    };
  } finally {
    await Promise.all([connection.close(), nativeConnection.close()]);
    await server.stop();
  }
}
