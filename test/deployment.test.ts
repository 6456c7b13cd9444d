import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { registry } from '../src/metrics';
import { TEMPORAL_CLI } from '../src/temporal/cli-binary';
import { DEPLOY_TEMPORAL, TEMPORAL_SERVER } from '../src/temporal/temporal-server';

const root = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir)).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(path.join(root, file)).isDirectory() ? sources(file) : file.endsWith('.ts') ? [file] : [];
  });
}

/** Every environment variable a file reads (not manifest `${{ env.X }}` text), and those it cannot start without. */
function envRead(files: string[]): { all: Set<string>; required: Set<string> } {
  const all = new Set<string>();
  const required = new Set<string>();
  for (const file of files) {
    const text = read(file);
    for (const [, name] of text.matchAll(/(?<!\{\{\s*)\benv\.([A-Z][A-Z0-9_]+)/g)) all.add(name!);
    for (const [, name] of text.matchAll(/requireSetting\(config, '\w+', '([A-Z][A-Z0-9_]+)'\)/g)) required.add(name!);
  }
  return { all, required };
}

describe('deployment files', function () {
  const compose = parse(read('docker-compose.yml'), { merge: true });
  const services = compose.services as Record<string, any>;
  const envOf = (service: string) => services[service].environment as Record<string, string>;

  it('docker-compose.yml runs Temporal on PostgreSQL, its UI, and the API and worker from one Dockerfile', function () {
    assert.deepEqual(Object.keys(services).sort(), ['api', 'postgresql', 'prometheus', 'temporal', 'temporal-namespace', 'temporal-schema', 'temporal-ui', 'worker']);
    assert.match(services.postgresql.image, /^postgres:\d+/);
    assert.match(services['temporal-ui'].image, /^temporalio\/ui:\d+\.\d+\.\d+$/);
    assert.equal(envOf('temporal').POSTGRES_SEEDS, 'postgresql');
    assert.equal(services.api.build, '.');
    assert.equal(services.worker.build, '.');
    assert.deepEqual(services.api.command, ['node', 'dist/src/main.js', 'api']);
    assert.deepEqual(services.worker.command, ['node', 'dist/src/main.js', 'worker']);
    assert.match(read('Dockerfile'), /npm run build/);
    // They start once the namespace exists, and are restarted if Temporal stops answering at a start.
    for (const name of ['api', 'worker']) {
      assert.equal(services[name].restart, 'unless-stopped', name);
      assert.equal(services[name].depends_on.postgresql.condition, 'service_healthy', name);
      assert.equal(services[name].depends_on['temporal-namespace'].condition, 'service_completed_successfully', name);
    }
    assert.match(services.postgresql.healthcheck.test.join(' '), /pg_isready/);
    assert.match(services.api.healthcheck.test.join(' '), /\/readyz/);
    // The build reads schema/ too (src/manifest/validate.ts imports its JSON Schema).
    for (const dir of ['schema', 'src', 'bin']) assert.match(read('Dockerfile'), new RegExp(`^COPY ${dir} \\./${dir}$`, 'm'), dir);
  });

  it('the API and the worker run with the Node flags and malloc arenas npm start gives the embedded default', function () {
    const pkg = JSON.parse(read('package.json'));
    assert.match(pkg.config.nodeFlags, /^--max-semi-space-size=\d+$/);
    assert.match(pkg.config.mallocArenaMax, /^\d+$/);
    assert.match(pkg.scripts.start, /MALLOC_ARENA_MAX=\$npm_package_config_mallocArenaMax exec node \$npm_package_config_nodeFlags dist\/src\/main\.js$/);
    assert.match(read('Dockerfile'), new RegExp(`^ENV NODE_OPTIONS=${pkg.config.nodeFlags}$`, 'm'));
    assert.match(read('Dockerfile'), new RegExp(`^ENV MALLOC_ARENA_MAX=${pkg.config.mallocArenaMax}$`, 'm'));
    // What docker-compose sets for a service would replace the image's NODE_OPTIONS.
    for (const service of ['api', 'worker']) assert.deepEqual([envOf(service).NODE_OPTIONS, envOf(service).MALLOC_ARENA_MAX], [undefined, undefined], service);
  });

  it('the Temporal server is the one the topology test runs: same release, configuration, schema and namespace scripts', function () {
    const dockerfile = read('deploy/temporal/Dockerfile');
    for (const service of ['temporal-schema', 'temporal', 'temporal-namespace']) assert.deepEqual(services[service].build, { context: '.', dockerfile: 'deploy/temporal/Dockerfile' }, service);
    for (const tool of [TEMPORAL_SERVER, TEMPORAL_CLI]) assert.match(dockerfile, new RegExp(`^RUN go install ${tool.modules.join(' ')}$`, 'm'), tool.label);
    // The files the topology test starts the server with (DEPLOY_TEMPORAL) are the image's.
    assert.equal(DEPLOY_TEMPORAL, path.join(root, 'deploy', 'temporal'));
    const copied = /^COPY (deploy\/temporal\/\S+ )+\/etc\/temporal\/$/m.exec(dockerfile)![0].split(' ').slice(1, -1).map((file) => path.basename(file));
    assert.deepEqual(copied.sort(), ['config.yaml', 'create-namespace.sh', 'dynamicconfig.yaml', 'setup-schema.sh', 'start-server.sh']);
    assert.match(read('deploy/temporal/start-server.sh'), /--config-file \/etc\/temporal\/config\.yaml/);
    assert.deepEqual(services['temporal-schema'].command, ['/etc/temporal/setup-schema.sh']);
    assert.deepEqual(services['temporal-namespace'].command, ['/etc/temporal/create-namespace.sh']);
    assert.equal(services.temporal.depends_on['temporal-schema'].condition, 'service_completed_successfully');
    assert.equal(services['temporal-namespace'].depends_on.temporal.condition, 'service_healthy');
    // Every variable the configuration reads that compose sets is one config.yaml or the scripts read.
    const readByServer = new Set([...['config.yaml', 'setup-schema.sh', 'start-server.sh'].flatMap((file) => [...read(`deploy/temporal/${file}`).matchAll(/(?:env "|\$\{?)([A-Z][A-Z0-9_]+)/g)].map(([, name]) => name!))]);
    for (const service of ['temporal-schema', 'temporal']) for (const name of Object.keys(envOf(service))) assert.ok(readByServer.has(name), `${service} sets ${name}, which the server's files never read`);
    assert.equal(envOf('temporal').DYNAMIC_CONFIG_FILE_PATH, '/etc/temporal/dynamicconfig.yaml');
    const settings = parse(read('deploy/temporal/dynamicconfig.yaml'));
    assert.deepEqual(settings['system.enableActivityEagerExecution'], [{ value: true }]);
    assert.deepEqual(settings['history.maximumBufferedEventsBatch'], [{ value: 1000 }]);
  });

  it('each entry point gets every variable it requires, and nothing it does not read', function () {
    // Each role's start, what both roles share of it, the parts they are built from, and the role's own code.
    const shared = ['src/config.ts', 'src/logger.ts', 'src/platform/external.ts', 'src/platform/parts.ts'];
    const apiFiles = [...shared, ...sources('src/api')];
    const workerFiles = [...shared, 'src/worker.ts', ...sources('src/activities')];
    for (const service of ['api', 'worker']) assert.match(envOf(service).PLATFORM_DATABASE_URL!, new RegExp(`^postgres://.*@postgresql:5432/${envOf('postgresql').POSTGRES_DB}$`), service);
    for (const [service, files, entry] of [['api', apiFiles, 'src/platform/api-process.ts'], ['worker', workerFiles, 'src/platform/worker-process.ts']] as const) {
      const { all, required } = envRead([...files, entry]);
      assert.ok(required.size >= 2, `${entry} requires ${[...required]}`);
      for (const name of required) assert.ok(name in envOf(service), `${service} lacks ${name}`);
      for (const name of Object.keys(envOf(service))) assert.ok(all.has(name), `${service} sets ${name}, which its code never reads`);
    }
  });

  it('ports line up: the API listens where it is published, the UI and services reach Temporal on its port', function () {
    assert.deepEqual(services.api.ports, [`${envOf('api').PORT}:${envOf('api').PORT}`]);
    assert.deepEqual(services.temporal.ports, ['7233:7233']);
    for (const service of ['api', 'worker', 'temporal-ui']) assert.equal(envOf(service).TEMPORAL_ADDRESS, 'temporal:7233', service);
    assert.equal(envOf('temporal-ui').TEMPORAL_CODEC_ENDPOINT, `${envOf('api').PLATFORM_BASE_URL}/codec`);
    const uiPublished = services['temporal-ui'].ports[0].split(':')[0];
    assert.equal(envOf('api').PLATFORM_CODEC_CORS_ORIGINS, `http://localhost:${uiPublished}`);
  });

  it('Prometheus scrapes the API (with the token file) and the worker on its metrics port, and alerts on failing and absent deliveries by metrics the platform has', function () {
    const prometheus = parse(read('deploy/prometheus/prometheus.yml'));
    const jobs = Object.fromEntries(prometheus.scrape_configs.map((job: any) => [job.job_name, job]));
    assert.deepEqual(jobs['platform-api'].static_configs[0].targets, [`api:${envOf('api').PORT}`]);
    assert.equal(jobs['platform-api'].authorization.credentials_file, '/etc/prometheus/admin-token');
    assert.deepEqual(jobs['platform-worker'].static_configs[0].targets, [`worker:${envOf('worker').PLATFORM_WORKER_METRICS_PORT}`]);
    assert.match(services.prometheus.image, /^prom\/prometheus:v\d+\.\d+\.\d+$/);
    const mounts = services.prometheus.volumes.map((volume: string) => volume.split(':')[1]);
    assert.deepEqual(mounts.sort(), ['/etc/prometheus/alerts.yml', '/etc/prometheus/prometheus.yml']);
    // The token file comes from the environment, as the API's token does: no file to write before `up`.
    const [tokenFile] = services.prometheus.configs;
    assert.deepEqual(tokenFile, { source: 'prometheus-admin-token', target: '/etc/prometheus/admin-token' });
    assert.equal(compose.configs[tokenFile.source].content, envOf('api').PLATFORM_ADMIN_TOKEN);
    const rules = parse(read('deploy/prometheus/alerts.yml')).groups[0].rules;
    assert.deepEqual(rules.map((rule: any) => rule.alert), ['DeliveriesFailing', 'DeliveriesAbsentFromLog']);
    // Failures the receiver or the platform caused, not a tenant's pause or deletion.
    assert.match(rules[0].expr, /platform_deliveries_total\{status="failed",reason!~"installation_\.\*"\}/);
    const finished = registry.getMetricsAsArray().find((metric) => metric.name === 'platform_deliveries_total') as { labelNames?: string[] } | undefined;
    assert.deepEqual(finished?.labelNames, ['status', 'event_type', 'reason']);
    assert.match(rules[1].expr, /platform_deliveries_absent_total/);
    const registered = new Set(registry.getMetricsAsArray().map((metric) => metric.name));
    for (const rule of rules) for (const [name] of rule.expr.matchAll(/platform_\w+/g)) assert.ok(registered.has(name), `${rule.alert} reads ${name}, which the platform does not export`);
  });

  it('the README documents every variable the code reads', function () {
    const readme = read('README.md');
    const { all } = envRead(sources('src'));
    assert.ok(all.size >= 10);
    for (const name of all) assert.match(readme, new RegExp(`\\b${name}\\b`), `README does not mention ${name}`);
  });
});
