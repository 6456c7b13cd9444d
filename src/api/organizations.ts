import type { Client } from '@temporalio/client';
import { ENGINE_DEADLINE_MS } from '../ingest/shard-client';
import { DIRECTORY_WORKFLOW_ID, orgQuery } from '../workflows/directory';

/**
 * Whether an organization id exists, for ingest. Organizations are never deleted, so one
 * seen once is known for good in this process; only an unknown id asks the directory again.
 */
export class KnownOrganizations {
  private readonly known = new Set<string>();
  /** Questions in flight: the 500 events of a batch ingest for one new organization ask once. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(private readonly client: Client) {}

  /** Asks the directory by the caller's deadline (ms since 1970): an engine that does not answer is unavailable. */
  async exists(id: string, deadline = Date.now() + ENGINE_DEADLINE_MS): Promise<boolean> {
    if (this.known.has(id)) return true;
    let answer = this.asking.get(id);
    if (!answer) {
      answer = this.ask(id, deadline).finally(() => this.asking.delete(id));
      this.asking.set(id, answer);
    }
    return answer;
  }

  private async ask(id: string, deadline: number): Promise<boolean> {
    const org = await this.client.withDeadline(deadline, () => this.client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(orgQuery, id));
    if (org?.id !== id) return false;
    this.remember(id);
    return true;
  }

  remember(id: string): void {
    this.known.add(id);
  }
}
