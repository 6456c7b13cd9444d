import { runEntryPoint } from './lifecycle';
import { runApiProcess } from './platform/api-process';
import { runEmbeddedProcess } from './platform/embedded-process';
import { runWorkerProcess } from './platform/worker-process';

/**
 * The one entry point: `node dist/src/main.js` runs the worker and the API in one process
 * (`npm start`: the embedded default), `… api` and `… worker` one role each against an
 * external cluster (docker-compose). Every role is built from the same parts
 * (src/platform/parts.ts).
 */
const roles = {
  all: ['platform failed to start', runEmbeddedProcess],
  api: ['api failed to start', runApiProcess],
  worker: ['worker failed', runWorkerProcess],
} as const;

const role = process.argv[2] ?? 'all';
if (!Object.hasOwn(roles, role)) {
  process.stderr.write(`unknown role "${role}": node dist/src/main.js [api|worker]\n`);
  process.exit(2);
}
const [failed, run] = roles[role as keyof typeof roles];
runEntryPoint(failed, run);
