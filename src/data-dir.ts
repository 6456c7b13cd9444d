import { accessSync, chmodSync, constants, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { generateEncryptionKey } from './temporal/codec';
import { makeDirectory } from './make-directory';

/** secrets.json of a data directory. */
interface StoredSecrets {
  adminToken: string;
  /** Generated here when none was given at the first start; a given one is never written. */
  encryptionKey?: string;
  /** Of the key the directory's payloads are sealed with (absent in directories from before it). */
  keyFingerprint?: string;
}

const fingerprint = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 16);

function readStored(file: string): StoredSecrets {
  let stored: Partial<StoredSecrets> | null;
  try {
    stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<StoredSecrets> | null;
  } catch (err) {
    throw new Error(`PLATFORM_DATA_DIR: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); restore it from a backup, or start on another PLATFORM_DATA_DIR`);
  }
  if (typeof stored?.adminToken !== 'string') throw new Error(`PLATFORM_DATA_DIR: ${file} holds no adminToken; restore it from a backup, or start on another PLATFORM_DATA_DIR`);
  return stored as StoredSecrets;
}

/**
 * The embedded default keeps its admin token and payload key in the data directory,
 * generated at first start (mode 0600), so a restart can still read its own histories.
 * A key given by PLATFORM_ENCRYPTION_KEY is the directory's key from its first start: a
 * different one later is refused, since it could read nothing the directory holds (it
 * started healthy and every organization looked gone). A directory from before the
 * fingerprint takes the key it is started with next. A rotation gives the new key with the
 * directory's in `olderKeys` (PLATFORM_DECRYPTION_KEYS): the new one is the directory's from then on.
 */
export function loadOrCreateSecrets(dataDir: string, givenKey?: string, olderKeys: readonly string[] = []): { adminToken: string; encryptionKey: string } {
  makeDirectory(dataDir, 'PLATFORM_DATA_DIR');
  // Temporal's SQLite file and the log's live here too: a read-only place fails them with "out of memory (14)".
  try {
    accessSync(dataDir, constants.W_OK);
  } catch (err) {
    throw new Error(`PLATFORM_DATA_DIR: ${dataDir} is not writable (${(err as NodeJS.ErrnoException).code})`);
  }
  const file = path.join(dataDir, 'secrets.json');
  const stored: StoredSecrets = existsSync(file) ? readStored(file) : { adminToken: `adm_${randomBytes(24).toString('base64url')}`, ...(!givenKey && { encryptionKey: generateEncryptionKey() }) };
  const key = givenKey ?? stored.encryptionKey;
  if (!key) throw new Error(`PLATFORM_ENCRYPTION_KEY is not set, and ${dataDir} was first started with one: set it again`);
  const rotated = stored.keyFingerprint !== undefined && olderKeys.some((older) => fingerprint(older) === stored.keyFingerprint);
  if (stored.keyFingerprint && stored.keyFingerprint !== fingerprint(key) && !rotated) {
    throw new Error(`PLATFORM_ENCRYPTION_KEY is not the key ${dataDir} was first started with${givenKey ? '' : ' (its secrets.json holds another)'}: it could read nothing there. Use that key, or another PLATFORM_DATA_DIR`);
  }
  if (!stored.keyFingerprint || (rotated && stored.keyFingerprint !== fingerprint(key))) {
    writeFileSync(file, JSON.stringify({ ...stored, keyFingerprint: fingerprint(key) }, null, 2), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return { adminToken: stored.adminToken, encryptionKey: key };
}
