import type { DirectoryIndex } from '../delivery-log/directory-index';

/**
 * Whether an organization id exists, for ingest. Organizations are never deleted, so one
 * seen once is known for good in this process; only an unknown id asks the read model again.
 */
export class KnownOrganizations {
  private readonly known = new Set<string>();
  /** Questions in flight: the 500 events of a batch ingest for one new organization ask once. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(private readonly directory: DirectoryIndex) {}

  async exists(id: string): Promise<boolean> {
    if (this.known.has(id)) return true;
    let answer = this.asking.get(id);
    if (!answer) {
      answer = this.ask(id).finally(() => this.asking.delete(id));
      this.asking.set(id, answer);
    }
    return answer;
  }

  private async ask(id: string): Promise<boolean> {
    const org = await this.directory.organization(id);
    if (org?.id !== id) return false;
    this.remember(id);
    return true;
  }

  remember(id: string): void {
    this.known.add(id);
  }
}
