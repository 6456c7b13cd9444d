import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Encryption } from '../encryption';

export { generateEncryptionKey } from '../encryption';

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';

/**
 * Every Temporal payload encrypted (DESIGN.md §5): signing secrets, configurations and
 * event bodies never stand in clear in workflow histories.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly encryption: Encryption;

  constructor(keyBase64: string) {
    this.encryption = new Encryption(keyBase64);
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCODING), [KEY_ID]: Buffer.from(this.encryption.keyId) },
      data: this.encryption.encrypt(temporal.api.common.v1.Payload.encode(payload).finish()),
    }));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.[METADATA_ENCODING_KEY] ?? []).toString() !== ENCODING) return payload;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID] ?? []).toString();
      if (keyId !== this.encryption.keyId) throw new Error(`payload was encrypted with key ${keyId}, this process has key ${this.encryption.keyId}`);
      return temporal.api.common.v1.Payload.decode(this.encryption.decrypt(Buffer.from(payload.data ?? [])));
    });
  }
}
