import assert from 'node:assert/strict';
import { TestPlatform } from './support/platform';
import { install, publishExample } from './support/examples';
import { readFileSync } from 'node:fs';
import { CpuGroups } from '../src/isolates/cpu-groups';

/** The cpu cgroup a process is in: cgroup v1's cpu line, or v2's. */
function cpuGroupOf(pid: number): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n').map((line) => line.split(':'));
  return (lines.find(([, controllers]) => controllers!.split(',').includes('cpu')) ?? lines.find(([id]) => id === '0')!)[2]!;
}

/** `/spin` loops for ever (until the 10 s deadline kills its process); anything else answers at once. */
const SCRIPT = `import { createIntegration } from 'integration-platform/runtime';
export default createIntegration({
  async fetch(request) {
    if (new URL(request.url).pathname.endsWith('/spin')) for (;;) {}
    return Response.json({ ok: true });
  },
});
`;

/** The outside test's scenario: one organization's code burns every core it can get; another's trivial endpoint must not notice beyond latency. */
describe('an organization whose code loops for ever, beside one whose endpoint is called 10 times a second', function () {
  this.timeout(180_000);
  const SPINNERS = 8;
  let platform: TestPlatform;
  let spinners: any[] = [];
  let quiet: any;

  before(async function () {
    platform = await new TestPlatform(__filename).start();
    const [a, b] = await Promise.all([platform.tenant(), platform.tenant()]);
    const name = await publishExample(platform, a, 'webhook-receiver', { edit: (manifest) => [manifest.replace('visibility: private', 'visibility: public'), SCRIPT] });
    // An organization's share of the pool (32 processes, a quarter each): all of it spinning.
    spinners = await Promise.all(Array.from({ length: SPINNERS }, () => install(platform, a, name)));
    quiet = await install(platform, b, name);
  });
  after(async () => platform?.stop());

  it('answers the other organization every time: its process is never taken for dead because the machine is busy', async function () {
    assert.equal((await fetch(`${quiet.urls.publicEndpoint}/`)).status, 200);
    let spinning = true;
    // Each spinner is called again as soon as its deadline has killed it: processes keep being started and replaced.
    const load = spinners.map(async (installation) => {
      while (spinning) await fetch(`${installation.urls.publicEndpoint}/spin`).then((answer) => answer.text());
    });
    const answers: { status: number; ms: number; body: string }[] = [];
    const started = Date.now();
    while (Date.now() - started < 25_000) {
      const at = performance.now();
      const answer = await fetch(`${quiet.urls.publicEndpoint}/`);
      answers.push({ status: answer.status, ms: performance.now() - at, body: await answer.text() });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    spinning = false;
    await Promise.all(load);
    const sorted = answers.map((answer) => answer.ms).sort((x, y) => x - y);
    process.stdout.write(`      the other organization: ${answers.length} calls, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(0)} ms\n`);
    assert.deepEqual(answers.filter((answer) => answer.status !== 200), [], 'every call answered 200');
  });

  it('puts each organization’s processes in a CPU group of its own, where this machine lets it (root, or a delegated cgroup)', async function () {
    const probe = CpuGroups.open();
    if (!probe.groups) return this.skip();
    probe.groups.close();
    // Warm again (the spinners' processes were killed at their deadlines).
    for (const installation of [...spinners, quiet]) assert.equal((await fetch(`${installation.urls.publicEndpoint}/`)).status, 200);
    const warm = platform.isolates.warm();
    const groupsOf = (installations: any[]) => new Set(warm.filter((w) => installations.some((i) => w.key.endsWith(`/${i.id}`))).map((w) => cpuGroupOf(w.pid)));
    const [ofA, ofB] = [groupsOf(spinners), groupsOf([quiet])];
    assert.equal(ofA.size, 1, `the spinning organization's processes share one group: ${[...ofA]}`);
    assert.equal(ofB.size, 1);
    assert.notDeepEqual([...ofA], [...ofB]);
    assert.match([...ofB][0]!, /integration-platform-\d+-\d+\/org-[0-9a-f]{16}$/);
  });
});
