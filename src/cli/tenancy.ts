import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, type Output } from './format';

/** `platform orgs create <id> --subdomain S --title T` (the administrator's token). */
export async function createOrg(api: ApiClient, output: Output, id: string | undefined, fields: { subdomain?: string; title?: string }): Promise<void> {
  const usage = 'platform orgs create <id> --subdomain <subdomain> --title <title>';
  if (!id) throw new CliError('missing <id>', usage, 2);
  if (!fields.subdomain || !fields.title) throw new CliError(`--${fields.subdomain ? 'title' : 'subdomain'} is required`, usage, 2);
  const org = await api.request<{ id: string; subdomain: string }>('POST', '/v1/orgs', { id, subdomain: fields.subdomain, title: fields.title });
  show(output, org, () => `Created organization ${org.id} (${org.subdomain})`);
}

/** `platform users create <id> --org A [--org B]`: prints the user's token, which is shown this once. */
export async function createUser(api: ApiClient, output: Output, id: string | undefined, orgs: string[]): Promise<void> {
  const usage = 'platform users create <id> --org <org> [--org <org> …]';
  if (!id) throw new CliError('missing <id>', usage, 2);
  if (orgs.length === 0) throw new CliError('--org is required', usage, 2);
  const user = await api.request<{ id: string; orgs: string[]; token: string }>('POST', '/v1/users', { id, orgs });
  show(output, user, () => `Created user ${user.id} in ${user.orgs.join(', ')}\nToken (shown once; only its hash is kept): ${user.token}`);
}
