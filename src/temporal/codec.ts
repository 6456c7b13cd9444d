import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Encryption, UnknownKeyError } from '../encryption';

export { generateEncryptionKey } from '../encryption';

const ENCODING = 'binary/encrypted';
/** The id of the key that sealed a payload, in its metadata: an operator sees which key a history needs. */
export const KEY_ID_METADATA = 'encryption-key-id';

/**
 * Every Temporal payload encrypted (DESIGN.md §5): signing secrets, configurations and
 * event bodies never stand in clear in workflow histories. Sealed with the current key,
 * opened with the key the payload names (older ones from PLATFORM_DECRYPTION_KEYS).
 */
/** Key ids kept as unknown at most: a key id is 16 hex digits; anything else is not ours to name. */
const UNKNOWN_KEYS_KEPT = 16;
const KEY_ID = /^[0-9a-f]{16}$/;

export class EncryptionCodec implements PayloadCodec {
  // Keys in #private fields: the worker logs its options (this codec among them) at debug, and a key must never be written out.
  readonly #encryption: Encryption;
  readonly #keyBase64: string;
  readonly #olderKeys: readonly string[];
  /**
   * Key ids of payloads this codec met and could not open (another process of the
   * namespace seals with a key this one lacks): every workflow task carrying one fails
   * here, so readiness says so, naming them. One codec serves a process's client, worker and API.
   */
  readonly unknownKeys = new Set<string>();

  constructor(
    keyBase64: string,
    olderKeys: readonly string[] = [],
    /** Whether what it cannot open is recorded (not for the codec endpoint, whose callers choose the key ids they send). */
    private readonly records = true,
  ) {
    [this.#keyBase64, this.#olderKeys, this.#encryption] = [keyBase64, olderKeys, new Encryption(keyBase64, olderKeys)];
  }

  /** The same keys, recording nothing: the codec endpoint's, so that no caller can make the process unready. */
  unrecorded(): EncryptionCodec {
    return new EncryptionCodec(this.#keyBase64, this.#olderKeys, false);
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCODING), [KEY_ID_METADATA]: Buffer.from(this.#encryption.keyId) },
      data: this.#encryption.encrypt(temporal.api.common.v1.Payload.encode(payload).finish()),
    }));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.[METADATA_ENCODING_KEY] ?? []).toString() !== ENCODING) return payload;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID_METADATA] ?? []).toString();
      try {
        return temporal.api.common.v1.Payload.decode(this.#encryption.decrypt(Buffer.from(payload.data ?? []), keyId));
      } catch (err) {
        if (err instanceof UnknownKeyError && this.records && KEY_ID.test(keyId) && this.unknownKeys.size < UNKNOWN_KEYS_KEPT) this.unknownKeys.add(keyId);
        throw err;
      }
    });
  }
}
