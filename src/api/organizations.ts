import type { Client } from '@temporalio/client';
import { DIRECTORY_WORKFLOW_ID, orgQuery } from '../workflows/directory';

/**
 * Whether an organization id exists, for ingest. Organizations are never deleted, so one
 * seen once is known for good in this process; only an unknown id asks the directory again.
 */
export class KnownOrganizations {
  private readonly known = new Set<string>();

  constructor(private readonly client: Client) {}

  async exists(id: string): Promise<boolean> {
    if (this.known.has(id)) return true;
    const org = await this.client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(orgQuery, id);
    if (org?.id !== id) return false;
    this.known.add(id);
    return true;
  }
}
