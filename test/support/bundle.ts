import { bundleWorkflowCode } from '@temporalio/worker';

/** The service's workflows bundled as its worker would bundle them, quietly, with extra interceptor modules if asked. */
export async function bundleWorkflows(workflowInterceptorModules: string[] = []): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), workflowInterceptorModules, logger: quietLogger });
  return code;
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => process.stderr.write(`bundle: ${message}\n`),
  error: (message: string) => process.stderr.write(`bundle: ${message}\n`),
};
