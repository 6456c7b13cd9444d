import type { ConnectionLike } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { searchAttributeKeys } from './search-attributes';

/**
 * Registers the attributes a cluster lacks (docker-compose's server starts without them);
 * idempotent, so every API and worker process runs it at start.
 */
export async function ensureSearchAttributes(connection: ConnectionLike, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = searchAttributeKeys.map((key) => key.name).filter((name) => !(name in (customAttributes ?? {})));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((name) => [name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
  });
  return missing;
}
