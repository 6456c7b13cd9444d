import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { DirectoryUser, Organization } from '../delivery-log/directory-index';
import { HistoryBudget } from './continue-as-new';
import { conflict, invalid } from '../contracts/failures';

export interface DirectoryState {
  orgs: Record<string, Organization>;
  users: Record<string, DirectoryUser>;
}

export const DIRECTORY_WORKFLOW_ID = 'directory';

export const createOrgUpdate = wf.defineUpdate<Organization, [Omit<Organization, 'createdAt'>]>('createOrg');
export const createUserUpdate = wf.defineUpdate<Omit<DirectoryUser, 'tokenHash'>, [Omit<DirectoryUser, 'createdAt'>]>('createUser');
/** The origins that may frame an organization's delivery portal links (none: an empty list). */
export const setPortalFrameAncestorsUpdate = wf.defineUpdate<Organization, [{ org: string; origins: string[] }]>('setPortalFrameAncestors');
/** Every organization and user: what fills the read model of a directory from before it. */
export const directoryQuery = wf.defineQuery<DirectoryState>('directory');

/** The read model's write: short, local, retried until the database takes it. */
const { saveDirectory } = wf.proxyLocalActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
});

const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** A CSP frame-ancestors origin: scheme and host (a leading `*.` for its subdomains), a port maybe, nothing else. */
const FRAME_ORIGIN = /^https?:\/\/(\*\.)?[a-z0-9]([a-z0-9.-]{0,200}[a-z0-9])?(:\d{1,5})?$/;
const MAX_FRAME_ORIGINS = 10;

/**
 * Organizations and users: few writes. Each creation is written to the read model (the
 * log's database) before it answers, where every request's authentication reads it;
 * the workflow keeps the state its validators need. Creations handled before the read
 * model replay as they ran (no write).
 */
export async function directoryWorkflow(state: DirectoryState = { orgs: {}, users: {} }, historyLimit = 1000): Promise<void> {
  const budget = new HistoryBudget(historyLimit);
  const has = (map: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(map, key);
  const findOrg = (key: string) => (has(state.orgs, key) ? state.orgs[key]! : (Object.values(state.orgs).find((org) => org.subdomain === key) ?? null));
  const recorded = async (entries: Parameters<typeof saveDirectory>[0]) => {
    if (wf.patched('directory-read-model')) await saveDirectory(entries);
  };

  wf.setHandler(directoryQuery, () => state);

  wf.setHandler(
    createOrgUpdate,
    async ({ id, subdomain, title }) => {
      const org = { id, subdomain, title, createdAt: new Date().toISOString() };
      state.orgs[id] = org;
      budget.spend();
      await recorded({ orgs: [org] });
      return org;
    },
    {
      validator: ({ id, subdomain, title }) => {
        const details = [];
        if (typeof id !== 'string' || !ID.test(id)) details.push({ field: 'id', message: 'must match ^[a-z0-9][a-z0-9_-]{0,62}$' });
        if (typeof subdomain !== 'string' || !SUBDOMAIN.test(subdomain)) details.push({ field: 'subdomain', message: 'must be a DNS label: lowercase letters, digits and hyphens' });
        if (typeof title !== 'string' || title.length < 1 || title.length > 100) details.push({ field: 'title', message: 'must be 1-100 characters' });
        if (details.length) throw invalid('invalid organization', details);
        if (findOrg(id) || findOrg(subdomain)) throw conflict(`an organization with id or subdomain "${findOrg(id) ? id : subdomain}" exists`);
      },
    },
  );

  wf.setHandler(
    createUserUpdate,
    async ({ id, orgs, tokenHash }) => {
      const user = { id, orgs: [...new Set(orgs)], tokenHash, createdAt: new Date().toISOString() };
      state.users[id] = user;
      budget.spend();
      await recorded({ users: [user] });
      return { id: user.id, orgs: user.orgs, createdAt: user.createdAt };
    },
    {
      validator: ({ id, orgs }) => {
        const details = [];
        if (typeof id !== 'string' || !ID.test(id)) details.push({ field: 'id', message: 'must match ^[a-z0-9][a-z0-9_-]{0,62}$' });
        if (!Array.isArray(orgs) || orgs.length === 0) details.push({ field: 'orgs', message: 'must list at least one organization id' });
        else orgs.filter((org) => typeof org !== 'string' || !has(state.orgs, org)).forEach((org) => details.push({ field: 'orgs', message: `no organization "${org}"` }));
        if (details.length) throw invalid('invalid user', details);
        if (has(state.users, id)) throw conflict(`a user with id "${id}" exists`);
      },
    },
  );

  wf.setHandler(
    setPortalFrameAncestorsUpdate,
    async ({ org, origins }) => {
      const { portalFrameAncestors: _before, ...rest } = state.orgs[org]!;
      const changed = { ...rest, ...(origins.length && { portalFrameAncestors: [...new Set(origins)] }) };
      state.orgs[org] = changed;
      budget.spend();
      await recorded({ orgs: [changed] });
      return changed;
    },
    {
      validator: ({ org, origins }) => {
        if (typeof org !== 'string' || !has(state.orgs, org)) throw invalid('no such organization', [{ field: 'org', message: `no organization "${org}"` }]);
        const details = [];
        if (!Array.isArray(origins) || origins.length > MAX_FRAME_ORIGINS) details.push({ field: 'origins', message: `must list at most ${MAX_FRAME_ORIGINS} origins` });
        else origins.forEach((origin, i) => typeof origin === 'string' && FRAME_ORIGIN.test(origin) ? undefined : details.push({ field: `origins[${i}]`, message: 'must be an origin: http(s)://host[:port] (lowercase, *. for subdomains), no path' }));
        if (details.length) throw invalid('invalid frame ancestors', details);
      },
    },
  );

  await wf.condition(() => budget.exhausted());
  await budget.drained();
  await wf.continueAsNew<typeof directoryWorkflow>(state, historyLimit);
}
