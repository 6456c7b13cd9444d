import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpuSecondsOf, treeCpuSecondsOf } from '../src/system/procfs';
import { findOrBuildTemporalCli } from '../src/temporal/cli-binary';
import { generateEncryptionKey } from '../src/temporal/codec';
import { freePort } from '../src/temporal/dev-server';
import { startPostgres } from '../test/support/postgres';
import { topologyBase } from '../test/support/topology';
import type { TemporalServer } from '../src/temporal/temporal-server';
import { cpuSeconds, node, peakRssMiB, rssMiB, treePssMiB, waitHealthy, type Stack } from './stack';

export type TopologyStack = Pick<Stack, 'base' | 'adminToken' | 'cpu' | 'peakRss' | 'rss' | 'stop'>;

/**
 * The production topology on this machine (test/topology.test.ts's, measured): a Temporal
 * server from deploy/temporal with each service in a process of its own, PostgreSQL for
 * its databases and the delivery log, two API processes (`base` takes them in turn, as a
 * load balancer would) and two workers. CPU is told by component: each API and worker,
 * each Temporal service, PostgreSQL with all its backends, the workers' workerd processes.
 */
export async function startTopology(): Promise<TopologyStack> {
  const postgres = await startPostgres();
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const processes: Record<string, ChildProcess> = {};
  let server: TemporalServer | undefined;
  const stopAll = async () => {
    await Promise.all(Object.values(processes).map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once('exit', resolve), child.kill('SIGTERM'))))));
    await server?.stop();
    await postgres.stop();
  };
  let urls: string[];
  try {
    const base = await topologyBase({ postgresUrl: postgres.url, cliPath: await findOrBuildTemporalCli(process.env), suffix: 'bench', adminToken, encryptionKey: generateEncryptionKey(), logLevel: 'error', apart: true });
    server = base.server;
    urls = base.apiPorts.map((apiPort) => `http://127.0.0.1:${apiPort}`);
    for (const [i, apiPort] of base.apiPorts.entries()) processes[`api ${i + 1}`] = node('api', { ...base.shared, PORT: String(apiPort), PLATFORM_BASE_URL: urls[i] });
    for (const i of [1, 2]) processes[`worker ${i}`] = node('worker', { ...base.shared, PLATFORM_WORKER_METRICS_PORT: String(await freePort()) });
    await Promise.all(urls.map(waitHealthy));
  } catch (err) {
    await stopAll();
    throw err;
  }
  const temporalServer = server;
  const postmaster = Number(postgres.pid);
  const temporal = () => Object.entries(temporalServer.pids()).map(([service, pid]) => [`temporal ${service}`, pid] as const);
  const platform = () => Object.entries(processes).map(([name, child]) => [name, child.pid] as const);
  let turn = 0;
  return {
    get base() {
      return urls[turn++ % urls.length]!;
    },
    adminToken,
    cpu: () => ({
      ...Object.fromEntries([...platform(), ...temporal()].map(([name, pid]) => [name, cpuSeconds(pid)])),
      // The workers' own time is theirs; what they started (workerd) is told apart.
      workerd: ['worker 1', 'worker 2'].reduce((sum, name) => sum + ((treeCpuSecondsOf(processes[name]!.pid!) ?? 0) - (cpuSecondsOf(processes[name]!.pid!) ?? 0)), 0),
      postgresql: treeCpuSecondsOf(postmaster),
    }),
    peakRss: () => Object.fromEntries([...platform(), ...temporal(), ['postgresql (server)', postmaster] as const].map(([name, pid]) => [name, peakRssMiB(pid)])),
    rss: () => ({
      ...Object.fromEntries([...platform(), ...temporal()].map(([name, pid]) => [name, rssMiB(pid)])),
      'postgresql (all backends, PSS)': treePssMiB(postmaster),
    }),
    stop: stopAll,
  };
}
