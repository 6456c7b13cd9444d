import { DIRECTORY_WORKFLOW_ID, createOrgUpdate, createUserUpdate, setPortalFrameAncestorsUpdate } from '../../workflows/directory';
import type { Organization } from '../../delivery-log/directory-index';
import { hashToken, newUserToken, requireMember } from '../auth';
import type { ApiDeps } from '../deps';
import type { RouteTable } from '../route-table';
import { orgSchema, userSchema } from '../schemas';

/** Organizations and users are created by the platform administrator (DESIGN.md §4). */
export function tenancyRoutes(routes: RouteTable, { client, organizations }: ApiDeps): void {
  const directory = () => client.workflow.getHandle(DIRECTORY_WORKFLOW_ID);

  routes.add<Omit<Organization, 'createdAt'>>(
    {
      method: 'post',
      path: '/v1/orgs',
      summary: 'Create an organization',
      access: 'admin',
      body: orgSchema,
      responses: { 201: { description: 'The organization', schema: orgSchema }, 409: { description: 'Id or subdomain taken' } },
    },
    async ({ body }) => {
      const org = await directory().executeUpdate(createOrgUpdate, { args: [body] });
      organizations.remember(org.id);
      return { status: 201, body: org };
    },
  );

  routes.add<{ origins: string[] }>(
    {
      method: 'put',
      path: '/v1/orgs/:id/portal-frame-ancestors',
      summary: 'The sites whose pages may embed the organization’s delivery portal links (CSP frame-ancestors origins; an empty list: none, the default)',
      access: 'member',
      body: { type: 'object', required: ['origins'], additionalProperties: false, properties: { origins: { type: 'array', items: { type: 'string', maxLength: 220 }, maxItems: 10, description: 'Origins such as https://app.example.com or https://*.example.com' } } },
      responses: { 200: { description: 'The organization', schema: orgSchema }, 400: { description: 'Not an origin' }, 404: { description: 'No such organization, or not a member' } },
    },
    async ({ caller, params, body }) => {
      requireMember(caller, params.id!, 'organization');
      return { status: 200, body: await directory().executeUpdate(setPortalFrameAncestorsUpdate, { args: [{ org: params.id!, origins: body.origins }] }) };
    },
  );

  routes.add<{ id: string; orgs: string[] }>(
    {
      method: 'post',
      path: '/v1/users',
      summary: 'Create a user and its bearer token (shown once; only its hash is stored)',
      access: 'admin',
      body: userSchema,
      responses: { 201: { description: 'The user and its token' }, 409: { description: 'Id taken' } },
    },
    async ({ body }) => {
      const token = newUserToken();
      const user = await directory().executeUpdate(createUserUpdate, { args: [{ id: body.id, orgs: body.orgs, tokenHash: hashToken(token) }] });
      return { status: 201, body: { ...user, token } };
    },
  );
}
