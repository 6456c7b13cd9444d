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

/**
 * AES-256-GCM with PLATFORM_ENCRYPTION_KEY: every Temporal payload (through the payload
 * codec) and every secret or payload body the delivery log stores at rest. The key id (a
 * hash prefix of the key) tells an operator which key something needs.
 */
export class Encryption {
  private readonly key: Buffer;
  readonly keyId: string;

  constructor(keyBase64: string) {
    this.key = Buffer.from(keyBase64, 'base64');
    if (this.key.length !== 32) throw new Error('PLATFORM_ENCRYPTION_KEY must be 32 bytes, base64-encoded');
    this.keyId = createHash('sha256').update(this.key).digest('hex').slice(0, 16);
  }

  /** iv | ciphertext | tag */
  encrypt(plain: Uint8Array): Buffer {
    const iv = freshIv();
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  }

  decrypt(data: Buffer): Buffer {
    const decipher = createDecipheriv('aes-256-gcm', this.key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  }

  /** Text at rest: base64 of the encrypted UTF-8. */
  seal(text: string): string {
    return this.encrypt(Buffer.from(text, 'utf8')).toString('base64');
  }

  open(sealed: string): string {
    return this.decrypt(Buffer.from(sealed, 'base64')).toString('utf8');
  }
}

export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}
