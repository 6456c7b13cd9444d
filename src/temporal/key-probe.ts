import type { Client } from '@temporalio/client';
import { keyIdOf } from '../encryption';
import { KEY_ID_METADATA } from './codec';

/** History events read to learn which keys sealed a namespace's payloads. */
const EVENTS_READ = 100;
const PROBE_DEADLINE_MS = 15_000;

/** The key ids that sealed payloads anywhere in `value` (a history event, as the server sent it). */
function keyIdsIn(value: unknown, found: Set<string>, depth = 0): void {
  if (!value || typeof value !== 'object' || depth > 12) return;
  const metadata = (value as { metadata?: Record<string, Uint8Array | null | undefined> }).metadata;
  const keyId = metadata?.[KEY_ID_METADATA];
  if (keyId) found.add(Buffer.from(keyId).toString());
  for (const child of Object.values(value)) if (child && typeof child === 'object' && !(child instanceof Uint8Array)) keyIdsIn(child, found, depth + 1);
}

/**
 * Refuses a process whose keys cannot open the namespace's workflows: its payloads say
 * which key sealed them (`encryption-key-id`), so the first events of `workflowId` (the
 * directory, which every deployment has once an API has started) name a key this process
 * must have. Without this, such a process answered /healthz `ok` while every workflow task
 * of the namespace failed on it. A namespace without that workflow has nothing to check.
 */
export async function assertKeysOpen(client: Client, namespace: string, workflowId: string, keys: readonly string[]): Promise<void> {
  // Longer than an API call's deadline: a start on a busy server waits for its answer rather than fail.
  const history = await client
    .withDeadline(Date.now() + PROBE_DEADLINE_MS, () => client.workflowService.getWorkflowExecutionHistory({ namespace, execution: { workflowId }, maximumPageSize: EVENTS_READ }))
    .catch((err: { code?: number }) => {
      // NOT_FOUND: a fresh namespace.
      if (err.code === 5) return undefined;
      throw err;
    });
  const sealedWith = new Set<string>();
  for (const event of history?.history?.events ?? []) keyIdsIn(event, sealedWith);
  const ours = keys.map(keyIdOf);
  const missing = [...sealedWith].filter((id) => !ours.includes(id));
  if (missing.length) {
    throw new Error(
      `PLATFORM_ENCRYPTION_KEY: the workflows of namespace "${namespace}" are sealed with key ${missing.join(', ')}, which this process lacks (it has ${ours.join(', ')}). Start it with that key, or give it in PLATFORM_DECRYPTION_KEYS while rotating to a new one (docs/decisions/operations.md)`,
    );
  }
}
