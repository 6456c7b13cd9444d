import { DEFAULT_HTTP_LIMITS } from '../api/http-server';
import { configFromEnv, requireSetting } from '../config';
import type { Heed } from '../lifecycle';
import { startExternal } from './external';
import { startApiRole } from './roles';

/** `node dist/src/main.js api`: the API alone, configured from the environment (docker-compose). */
export async function runApiProcess(heed: Heed): Promise<void> {
  const config = configFromEnv();
  const adminToken = requireSetting(config, 'adminToken', 'PLATFORM_ADMIN_TOKEN');
  const { parts, started } = await startExternal(config, heed, 'api');
  await startApiRole(parts, started, {
    adminToken,
    port: config.port,
    codecTrustsLoopback: false,
    httpLimits: { ...DEFAULT_HTTP_LIMITS, connectionsPerClient: config.maxConnectionsPerClient },
    codecCorsOrigins: config.codecCorsOrigins,
  });
  parts.settings.logger.info({ url: config.baseUrl }, 'api listening');
}
