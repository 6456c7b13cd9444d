import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec } from './codec';

export interface TemporalSettings {
  address: string;
  namespace: string;
  encryptionKey: string;
}

/** The one data converter of every client and worker: all payloads go through the codec. */
export function dataConverter(encryptionKey: string): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(encryptionKey)] };
}

export async function connectClient(settings: TemporalSettings): Promise<Client> {
  const connection = await Connection.connect({ address: settings.address });
  return new Client({ connection, namespace: settings.namespace, dataConverter: dataConverter(settings.encryptionKey) });
}
