import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM over every Temporal payload (DESIGN.md §5): signing secrets, configurations
 * and event bodies never stand in clear in workflow histories. The key id (a hash prefix
 * of the key) lets an operator tell which key a payload needs.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly key: Buffer;
  readonly keyId: string;

  constructor(keyBase64: string) {
    this.key = Buffer.from(keyBase64, 'base64');
    if (this.key.length !== 32) throw new Error('PLATFORM_ENCRYPTION_KEY must be 32 bytes, base64-encoded');
    this.keyId = createHash('sha256').update(this.key).digest('hex').slice(0, 16);
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCODING), [KEY_ID]: Buffer.from(this.keyId) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.[METADATA_ENCODING_KEY] ?? []).toString() !== ENCODING) return payload;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID] ?? []).toString();
      if (keyId !== this.keyId) throw new Error(`payload was encrypted with key ${keyId}, this process has key ${this.keyId}`);
      const data = Buffer.from(payload.data ?? []);
      const iv = data.subarray(0, IV_BYTES);
      const tag = data.subarray(data.length - TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}

export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}
