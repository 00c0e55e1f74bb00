/** People's approvals: the one implementation `tessera grant` and the admin API call. */
import type { GrantRecord } from '../../store/types.ts';
import { revokeGrant as revoke } from '../lifecycle/grants.ts';
import { describeAccess, ResourceCatalog, type DescribedAccess } from '../resources.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { notFound } from './errors.ts';
import { findUser } from './users.ts';

export interface ListedGrant {
  readonly grant: GrantRecord;
  readonly clientName: string;
  /** The APIs it covers, by their names: what the person approved access to. */
  readonly apis: DescribedAccess['apis'];
}

/** The grants of a user that are not revoked, with their clients' names and the APIs they cover. */
export async function listUserGrants(deps: Pick<ManageDeps, 'store'>, username: string): Promise<ListedGrant[]> {
  const { store } = deps;
  const user = await findUser(deps, username);
  const grants = await store.grants.listForUser(user.id);
  const names = new Map(
    await Promise.all([...new Set(grants.map((grant) => grant.clientId))].map(async (id) => [id, (await store.clients.get(id))?.name ?? id] as const)),
  );
  const catalog = new ResourceCatalog(await store.resources.list());
  return grants.map((grant) => ({
    grant,
    clientName: names.get(grant.clientId) ?? grant.clientId,
    apis: describeAccess(catalog, grant.scope, grant.createdAt).apis,
  }));
}

/** Whether the grant still has tokens that work at `now`. */
export const grantActive = (grant: GrantRecord, now: number): boolean => grant.activeUntil !== null && grant.activeUntil > now;

export function grantJson({ grant, clientName, apis }: ListedGrant, now: number): Record<string, unknown> {
  return {
    grant_id: grant.id,
    client_id: grant.clientId,
    client_name: clientName,
    scope: grant.scope.join(' '),
    apis: apis.map((api) => ({ identifier: api.identifier, name: api.name, scopes: api.scopes.map((scope) => scope.name) })),
    grant_type: grant.kind,
    approved_at: new Date(grant.createdAt).toISOString(),
    last_used_at: isoTime(grant.lastUsedAt),
    active: grantActive(grant, now),
    device:
      grant.device === null
        ? null
        : { ip: grant.device.ip, user_agent: grant.device.userAgent, requested_at: new Date(grant.device.requestedAt).toISOString() },
  };
}

/** Revokes a grant: its access and refresh tokens stop working. False when it was revoked already. */
export async function revokeGrant(deps: ManageDeps, id: string): Promise<boolean> {
  const grant = await deps.store.grants.get(id);
  if (!grant) throw notFound`no grant with id ${id}`;
  return revoke(deps, grant, 'operator');
}
