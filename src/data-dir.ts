import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { generateEncryptionKey } from './temporal/codec';

export interface GeneratedSecrets {
  adminToken: string;
  encryptionKey: string;
}

/**
 * The embedded default keeps its admin token and payload key in the data directory,
 * generated at first start (mode 0600), so a restart can still read its own histories.
 */
export function loadOrCreateSecrets(dataDir: string): GeneratedSecrets {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as GeneratedSecrets;
  const secrets = { adminToken: `adm_${randomBytes(24).toString('base64url')}`, encryptionKey: generateEncryptionKey() };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
  return secrets;
}
