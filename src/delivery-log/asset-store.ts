import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from './schema';

export interface StoredAsset {
  contentType: string;
  bytes: Buffer;
}

/** Source maps share the store; they are not served. */
export const SOURCE_MAP_TYPE = 'application/json';

export const assetHash = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Integrations' images (icons, previews) by the SHA-256 of their bytes, in the log's
 * database rather than in versions' workflow payloads: a version names them by hash, one
 * image published in several versions is kept once, and a URL made of the hash names the
 * same bytes for ever (served immutable).
 */
export class AssetStore {
  constructor(private readonly db: Kysely<Schema>) {}

  /** Keeps each asset; answers its hash. One already kept is not written again. */
  async put(assets: StoredAsset[]): Promise<string[]> {
    const rows = assets.map(({ contentType, bytes }) => ({ hash: assetHash(bytes), content_type: contentType, data: bytes.toString('base64'), size: bytes.length, created_at: Date.now() }));
    for (const row of rows) await this.db.insertInto('integration_assets').values(row).onConflict((oc) => oc.column('hash').doNothing()).execute();
    return rows.map((row) => row.hash);
  }

  async get(hash: string): Promise<StoredAsset | undefined> {
    const row = await this.db.selectFrom('integration_assets').select(['content_type', 'data']).where('hash', '=', hash).executeTakeFirst();
    return row && { contentType: row.content_type, bytes: Buffer.from(row.data, 'base64') };
  }
}
