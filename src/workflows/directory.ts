import * as wf from '@temporalio/workflow';
import { HistoryBudget } from './continue-as-new';
import { conflict, invalid } from './errors';

export interface Org {
  id: string;
  subdomain: string;
  title: string;
  createdAt: string;
}

export interface User {
  id: string;
  orgs: string[];
  tokenHash: string;
  createdAt: string;
}

export interface Principal {
  userId: string;
  orgs: string[];
}

export interface DirectoryState {
  orgs: Record<string, Org>;
  users: Record<string, User>;
}

export const DIRECTORY_WORKFLOW_ID = 'directory';

export const createOrgUpdate = wf.defineUpdate<Org, [Omit<Org, 'createdAt'>]>('createOrg');
export const createUserUpdate = wf.defineUpdate<Omit<User, 'tokenHash'>, [Omit<User, 'createdAt'>]>('createUser');
/** Token hash -> the user and its organizations, or null. */
export const principalQuery = wf.defineQuery<Principal | null, [string]>('principal');
/** By id or subdomain. */
export const orgQuery = wf.defineQuery<Org | null, [string]>('org');

const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Organizations and users: few writes, read on every request through a cache in the API. */
export async function directoryWorkflow(state: DirectoryState = { orgs: {}, users: {} }, historyLimit = 1000): Promise<void> {
  const budget = new HistoryBudget(historyLimit);
  const byToken = new Map(Object.values(state.users).map((user) => [user.tokenHash, user]));
  const has = (map: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(map, key);
  const findOrg = (key: string) => (has(state.orgs, key) ? state.orgs[key]! : (Object.values(state.orgs).find((org) => org.subdomain === key) ?? null));

  wf.setHandler(principalQuery, (tokenHash) => {
    const user = byToken.get(tokenHash);
    return user ? { userId: user.id, orgs: user.orgs } : null;
  });
  wf.setHandler(orgQuery, findOrg);

  wf.setHandler(
    createOrgUpdate,
    ({ id, subdomain, title }) => {
      const org = { id, subdomain, title, createdAt: new Date().toISOString() };
      state.orgs[id] = org;
      budget.spend();
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
    ({ id, orgs, tokenHash }) => {
      const user = { id, orgs: [...new Set(orgs)], tokenHash, createdAt: new Date().toISOString() };
      state.users[id] = user;
      byToken.set(tokenHash, user);
      budget.spend();
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

  await wf.condition(() => budget.exhausted());
  await budget.drained();
  await wf.continueAsNew<typeof directoryWorkflow>(state, historyLimit);
}
