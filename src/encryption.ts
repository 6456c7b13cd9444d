import { createCipheriv, createDecipheriv, createHash, randomBytes, randomFillSync } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * IVs are cut from a pool of random bytes, refilled once spent: a call into the CSPRNG
 * for each 12 bytes cost more than the cipher (every payload and log body is sealed).
 */
const ivPool = Buffer.alloc(IV_BYTES * 1024);
let ivTaken = ivPool.length;
function freshIv(): Buffer {
  if (ivTaken === ivPool.length) {
    randomFillSync(ivPool);
    ivTaken = 0;
  }
  ivTaken += IV_BYTES;
  return Buffer.from(ivPool.subarray(ivTaken - IV_BYTES, ivTaken));
}

/** A key's id: a hash prefix of it, which tells an operator which key something needs without showing it. */
export function keyIdOf(keyBase64: string): string {
  return createHash('sha256').update(Buffer.from(keyBase64, 'base64')).digest('hex').slice(0, 16);
}

/** A key of the ring was not given to this process: what it sealed cannot be opened here. */
export class UnknownKeyError extends Error {}

/**
 * AES-256-GCM with PLATFORM_ENCRYPTION_KEY: every Temporal payload (through the payload
 * codec) and every secret or payload body the delivery log stores at rest. Older keys
 * (PLATFORM_DECRYPTION_KEYS) still open what they sealed, so that a key is rotated while
 * the platform runs; only the current one seals.
 */
export class Encryption {
  private readonly keys = new Map<string, Buffer>();
  /** The id of the key that seals. */
  readonly keyId: string;

  constructor(keyBase64: string, olderKeys: readonly string[] = []) {
    for (const key of [keyBase64, ...olderKeys]) {
      const bytes = Buffer.from(key, 'base64');
      if (bytes.length !== 32) throw new Error('PLATFORM_ENCRYPTION_KEY and PLATFORM_DECRYPTION_KEYS must each be 32 bytes, base64-encoded');
      this.keys.set(keyIdOf(key), bytes);
    }
    this.keyId = keyIdOf(keyBase64);
  }

  /** The ids of every key this process opens with, the sealing one first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /** iv | ciphertext | tag */
  encrypt(plain: Uint8Array): Buffer {
    const iv = freshIv();
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.keyId)!, iv);
    return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  }

  /**
   * With the key `keyId` names (a Temporal payload says which); without one (the log's
   * values), with each key in turn: GCM's tag refuses a wrong key, and the current key,
   * tried first, opens all but what is older than a rotation.
   */
  decrypt(data: Buffer, keyId?: string): Buffer {
    if (keyId !== undefined) {
      const key = this.keys.get(keyId);
      if (!key) throw new UnknownKeyError(`sealed with key ${keyId}, which this process lacks (it has ${this.keyIds.join(', ')}: PLATFORM_ENCRYPTION_KEY, then PLATFORM_DECRYPTION_KEYS)`);
      return decryptWith(key, data);
    }
    for (const key of this.keys.values()) {
      try {
        return decryptWith(key, data);
      } catch {
        // Not this key's: the next one may open it.
      }
    }
    throw new UnknownKeyError(`sealed with a key this process lacks, or altered (none of ${this.keyIds.join(', ')} opens it)`);
  }

  /** Text at rest: base64 of the encrypted UTF-8. */
  seal(text: string): string {
    return this.encrypt(Buffer.from(text, 'utf8')).toString('base64');
  }

  open(sealed: string): string {
    return this.decrypt(Buffer.from(sealed, 'base64')).toString('utf8');
  }
}

function decryptWith(key: Buffer, data: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
}

export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}
