import path from 'node:path';
import { cachedOrBuilt, isExecutable, onPath, type GoTool } from './go-tools';

/** Newer tags carry a `replace` directive that `go install` refuses (DESIGN.md §2). */
export const TEMPORAL_CLI: GoTool = {
  label: 'the Temporal CLI',
  cacheName: 'temporal-cli-v1.5.1',
  modules: ['github.com/temporalio/cli/cmd/temporal@v1.5.1'],
  binaries: ['temporal'],
};

/**
 * Finds the Temporal CLI in DESIGN.md's order: TEMPORAL_CLI_PATH, PATH, the tool cache,
 * and otherwise builds it once with `go install` into the tool cache.
 */
export async function findOrBuildTemporalCli(
  env: NodeJS.ProcessEnv,
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  if (env.TEMPORAL_CLI_PATH) {
    if (!isExecutable(env.TEMPORAL_CLI_PATH)) throw new Error(`TEMPORAL_CLI_PATH=${env.TEMPORAL_CLI_PATH} is not an executable file`);
    return env.TEMPORAL_CLI_PATH;
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return fromPath;
  return path.join(await cachedOrBuilt(TEMPORAL_CLI, env, say), 'temporal');
}
