import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { IllegalStateError } from '@temporalio/common';
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
  // A worker stopped by the bench itself (no signal handlers of the SDK's), its logs at warn, as the platform's; unless the
  // process has its runtime already (an SDK connection made one), which then serves.
  try {
    installTemporalRuntime(createLogger('warn'));
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-floor-'));
  const server = await startDevServer({ cliPath: await findOrBuildTemporalCli(process.env), namespace: 'default', dbFile: path.join(dataDir, 'temporal.db') });
  try {
    const connection = await Connection.connect({ address: server.address });
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    try {
      return await measure(n, new Client({ connection }), nativeConnection, server.pid!);
    } finally {
      await Promise.allSettled([connection.close(), nativeConnection.close()]);
    }
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Each signal's call and its activity, each waited for (at most 30 s: a stalled floor fails the bench, it does not hang it). */
async function measure(n: number, client: Client, connection: NativeConnection, serverPid: number) {
  const ran = new Map<number, () => void>();
  const worker = await Worker.create({
    connection,
    taskQueue: 'floor',
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./floor-workflow'), logger: temporalRuntimeLogger(createLogger('warn')) }),
    activities: { reached: async (i: number) => ran.get(i)?.() },
  });
  const running = worker.run();
  try {
    const signal = (i: number) => client.workflow.signalWithStart<typeof floorWorkflow, [number]>('floorWorkflow', { workflowId: 'floor', taskQueue: 'floor', signal: floorSignal, signalArgs: [i] });
    const once = async (i: number): Promise<{ signalMs: number; toActivityMs: number }> => {
      let timer: NodeJS.Timeout | undefined;
      const reached = new Promise<number>((resolve, reject) => {
        ran.set(i, () => resolve(performance.now()));
        timer = setTimeout(() => reject(new Error(`the floor's activity ${i} did not run within 30 s`)), 30_000);
      });
      const started = performance.now();
      await signal(i);
      const signalMs = performance.now() - started;
      const toActivityMs = (await reached.finally(() => clearTimeout(timer))) - started;
      return { signalMs, toActivityMs };
    };
    // The workflow started and its first tasks done: what follows is the steady state.
    for (let i = -20; i < 0; i++) await once(i);
    const cpuBefore = treeCpuSecondsOf(serverPid) ?? 0;
    const runs: { signalMs: number; toActivityMs: number }[] = [];
    for (let i = 0; i < n; i++) runs.push(await once(i));
    const serverCpuMs = (((treeCpuSecondsOf(serverPid) ?? 0) - cpuBefore) * 1000) / n;
    const signalMs = runs.map((run) => run.signalMs);
    const toActivityMs = runs.map((run) => run.toActivityMs);
    return {
      signals: n,
      signalMs: { p50: percentile(signalMs, 50), p99: percentile(signalMs, 99) },
      signalToActivityMs: { p50: percentile(toActivityMs, 50), p99: percentile(toActivityMs, 99) },
      oneAtATimePerSCeiling: round(1000 / percentile(signalMs, 50)),
      devServerCpuMsPerSignal: round(serverCpuMs, 2),
    };
  } finally {
    worker.shutdown();
    await running.catch(() => undefined);
  }
}
