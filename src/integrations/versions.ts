import type { Client } from '@temporalio/client';
import { integrationVersionWorkflowId, versionQuery, type IntegrationVersion } from '../contracts/integration';
import type { VersionChange } from '../contracts/installation';

/** What a version brings to the installations moved to it. */
export const changeOf = ({ version, manifest, eventTypes }: Pick<IntegrationVersion, 'version' | 'manifest' | 'eventTypes'>): VersionChange => ({
  version,
  configurations: manifest.configurations,
  scopes: manifest.scopes,
  eventTypes: eventTypes ?? [],
});

/** Versions kept in memory; each holds a bundle of at most 1 MiB. */
const KEPT = 64;

/**
 * Published versions, read from their workflows once per process: a version never
 * changes, so what was read stays true (least recently used ones are dropped past 64).
 */
export class IntegrationVersions {
  private readonly kept = new Map<string, Promise<IntegrationVersion>>();

  constructor(private readonly client: Client) {}

  get(name: string, version: number): Promise<IntegrationVersion> {
    const key = `${name}@${version}`;
    let found = this.kept.get(key);
    if (found) this.kept.delete(key);
    else found = this.client.workflow.getHandle(integrationVersionWorkflowId(name, version)).query(versionQuery);
    this.kept.set(key, found);
    found.catch(() => this.kept.delete(key));
    while (this.kept.size > KEPT) this.kept.delete(this.kept.keys().next().value!);
    return found;
  }
}
