/**
 * Organizations (docs/organizations.md): the one implementation `tessera org`, the admin API
 * and the console call. An organization has members with roles, may have an e-mail domain
 * that, once the operator vouches for it (`--verified`), sends its people's sign-in to its
 * upstream provider (flows/organizations/routing.ts), and may require its members to approve
 * apps only after a passkey or a second factor (flows/organizations/policy.ts).
 */
import { randomUUID } from 'node:crypto';
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { DuplicateError, isOrganizationRole, type OrganizationRecord, type OrganizationRole } from '../../store/types.ts';
import { checkMayChangeUser, checkMayRouteSignIn } from './authority.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';
import { findUser } from './users.ts';

/** A server keeps at most this many organizations: each is a row the consent and sign-in pages may read. */
export const MAX_ORGANIZATIONS = 10_000;

export interface OrganizationInput {
  readonly name?: unknown;
  readonly domain?: unknown;
  readonly domain_verified?: unknown;
  readonly provider?: unknown;
  readonly require_passkey?: unknown;
  readonly require_second_factor?: unknown;
}

/** RFC 1035 §2.3.1 labels, as an e-mail address's domain has them, lower-cased. */
const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

function checkName(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid`${field('name')} is required: the organization's name`;
  const name = raw.trim();
  if (name.length > 200) throw invalid`${field('name')}: a name of at most 200 characters`;
  // Shown on the consent page and in the console: no line breaks, and no U+202E turning
  // "Acme" into what it is not.
  if (hasUnsafeCharacters(name)) throw invalid`${field('name')} ${UNSAFE_CHARACTERS_RULE}`;
  return name;
}

function checkDomain(raw: unknown): string | null {
  if (raw === null || raw === '') return null;
  const domain = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (domain.length > 253 || !DOMAIN.test(domain)) throw invalid`${field('domain')} ${String(raw).slice(0, 100)}: an e-mail domain, such as example.com`;
  return domain;
}

function checkFlag(name: string, raw: unknown): boolean {
  if (typeof raw !== 'boolean') throw invalid`${field(name)}: true or false`;
  return raw;
}

async function checkProvider(deps: Pick<ManageDeps, 'store'>, raw: unknown): Promise<string | null> {
  if (raw === null || raw === '') return null;
  if (typeof raw !== 'string' || (await deps.store.identityProviders.get(raw)) === null)
    throw invalid`${field('provider')} ${String(raw).slice(0, 100)}: no upstream provider with this id (tessera provider list)`;
  return raw;
}

/** The organization `input` makes of `current` (null: a new one), each field checked. */
async function registration(deps: ManageDeps, input: OrganizationInput, current: OrganizationRecord | null): Promise<OrganizationRecord> {
  const now = deps.clock.now();
  const record: OrganizationRecord = {
    id: current?.id ?? randomUUID(),
    name: input.name === undefined && current !== null ? current.name : checkName(input.name),
    domain: input.domain === undefined ? (current?.domain ?? null) : checkDomain(input.domain),
    domainVerified: input.domain_verified === undefined ? (current?.domainVerified ?? false) : checkFlag('domain_verified', input.domain_verified),
    providerId: input.provider === undefined ? (current?.providerId ?? null) : await checkProvider(deps, input.provider),
    requirePasskey: input.require_passkey === undefined ? (current?.requirePasskey ?? false) : checkFlag('require_passkey', input.require_passkey),
    requireSecondFactor:
      input.require_second_factor === undefined ? (current?.requireSecondFactor ?? false) : checkFlag('require_second_factor', input.require_second_factor),
    createdAt: current?.createdAt ?? now,
    updatedAt: now,
  };
  // A changed domain is not the one vouched for: it is verified again, by saying so. A domain
  // cleared takes its verification with it, so that clearing a verified one is not refused.
  const domainChanged = current !== null && record.domain !== current.domain;
  const verified = domainChanged && input.domain_verified === undefined ? false : record.domainVerified;
  if (verified && record.domain === null) throw invalid`${field('domain_verified')}: give the ${field('domain')} that is verified`;
  const routed = { ...record, domainVerified: verified };
  const routesNow = routed.domainVerified && routed.providerId !== null;
  const routedBefore =
    current?.domainVerified === true && current.providerId !== null && current.domain === routed.domain && current.providerId === routed.providerId;
  const routeChanged = routesNow && !routedBefore;
  if (routeChanged) checkMayRouteSignIn(deps.caller, input.provider !== undefined ? 'provider' : 'domain_verified');
  return routed;
}

function taken(record: OrganizationRecord) {
  return record.domainVerified
    ? conflict`an organization named ${record.name}, or with the verified domain ${record.domain ?? ''}, exists already`
    : conflict`${field('name')} ${record.name}: an organization has this name already`;
}

export async function addOrganization(deps: ManageDeps, input: OrganizationInput): Promise<OrganizationRecord> {
  const organization = await registration(deps, input, null);
  if ((await deps.store.organizations.list()).length >= MAX_ORGANIZATIONS) throw conflict`a server has at most ${MAX_ORGANIZATIONS} organizations`;
  try {
    await deps.store.organizations.create(organization);
  } catch (error) {
    if (error instanceof DuplicateError) throw taken(organization);
    throw error;
  }
  await deps.events.emit({
    type: 'organization.created',
    detail: { organization: organization.id, name: organization.name, domain: organization.domain, by: 'operator' },
  });
  return organization;
}

export async function listOrganizations(deps: Pick<ManageDeps, 'store'>): Promise<OrganizationRecord[]> {
  return deps.store.organizations.list();
}

/** An organization by its id, or by its name (what an operator is more likely to have at hand). */
export async function getOrganization(deps: Pick<ManageDeps, 'store'>, idOrName: string): Promise<OrganizationRecord> {
  const organization = (await deps.store.organizations.get(idOrName)) ?? (await deps.store.organizations.byName(idOrName));
  if (organization === null) throw notFound`no organization ${idOrName}`;
  return organization;
}

export async function updateOrganization(deps: ManageDeps, idOrName: string, input: OrganizationInput): Promise<OrganizationRecord> {
  const current = await getOrganization(deps, idOrName);
  const organization = await registration(deps, input, current);
  if (organization.requirePasskey !== current.requirePasskey || organization.requireSecondFactor !== current.requireSecondFactor)
    await checkMayChangeMembers(deps, organization);
  try {
    if (!(await deps.store.organizations.update(organization))) throw notFound`no organization ${idOrName}`;
  } catch (error) {
    if (error instanceof DuplicateError) throw taken(organization);
    throw error;
  }
  await deps.events.emit({
    type: 'organization.updated',
    detail: { organization: organization.id, name: organization.name, fields: Object.keys(input).join(' '), by: 'operator' },
  });
  return organization;
}

/**
 * An organization's sign-in policy is what its members' approvals must meet: changing it, or
 * removing the organization and with it every membership and the policy, changes each member,
 * which for one who holds a console role needs what a change of the person needs
 * (checkMayChangeUser), as making them a member or ending their membership does.
 */
async function checkMayChangeMembers(deps: ManageDeps, organization: OrganizationRecord): Promise<void> {
  for (const member of await deps.store.organizations.members(organization.id)) {
    checkMayChangeUser(deps.caller, { username: member.username, role: member.consoleRole });
  }
}

/** Removes it and its memberships; approvals given for it keep no organization (their tokens carry no org_id). */
export async function removeOrganization(deps: ManageDeps, idOrName: string): Promise<void> {
  const organization = await getOrganization(deps, idOrName);
  await checkMayChangeMembers(deps, organization);
  if (!(await deps.store.organizations.remove(organization.id))) throw notFound`no organization ${idOrName}`;
  await deps.events.emit({ type: 'organization.removed', detail: { organization: organization.id, name: organization.name, by: 'operator' } });
}

export interface MemberInput {
  readonly username?: unknown;
  readonly role?: unknown;
}

export function checkOrganizationRole(raw: unknown, name = 'role'): OrganizationRole {
  if (raw === undefined || raw === null || raw === '') return 'member';
  if (!isOrganizationRole(raw)) throw invalid`${field(name)} ${String(raw).slice(0, 40)}: owner, admin or member`;
  return raw;
}

/** Makes the person a member with the role (member unless given), or gives a member the role. */
export async function setOrganizationMember(deps: ManageDeps, idOrName: string, input: MemberInput): Promise<OrganizationMemberJson> {
  const organization = await getOrganization(deps, idOrName);
  if (typeof input.username !== 'string' || input.username === '') throw invalid`${field('username')} is required: the person, by username`;
  const user = await findUser(deps, input.username);
  // A membership can require a passkey or second factor of the person's approvals: a change
  // to the person, which for a console operator is as much theirs as their password.
  checkMayChangeUser(deps.caller, user);
  const role = checkOrganizationRole(input.role);
  const now = deps.clock.now();
  await deps.store.organizations.setMember({ organizationId: organization.id, userId: user.id, role, createdAt: now });
  await deps.events.emit({
    type: 'organization.member_set',
    userId: user.id,
    username: user.username,
    detail: { organization: organization.id, role, by: 'operator' },
  });
  const member = (await deps.store.organizations.members(organization.id)).find((one) => one.userId === user.id);
  return { username: user.username, role, user_id: user.id, created_at: isoTime(member?.createdAt ?? now) };
}

export async function removeOrganizationMember(deps: ManageDeps, idOrName: string, username: string): Promise<void> {
  const organization = await getOrganization(deps, idOrName);
  const user = await findUser(deps, username);
  checkMayChangeUser(deps.caller, user);
  if (!(await deps.store.organizations.removeMember(organization.id, user.id))) throw notFound`${user.username} is no member of ${organization.name}`;
  await deps.events.emit({
    type: 'organization.member_removed',
    userId: user.id,
    username: user.username,
    detail: { organization: organization.id, by: 'operator' },
  });
}

export interface OrganizationMemberJson {
  readonly username: string;
  readonly role: OrganizationRole;
  readonly user_id: string;
  readonly created_at: string | null;
}

export async function listOrganizationMembers(deps: Pick<ManageDeps, 'store'>, idOrName: string): Promise<OrganizationMemberJson[]> {
  const organization = await getOrganization(deps, idOrName);
  return (await deps.store.organizations.members(organization.id)).map((member) => ({
    username: member.username,
    role: member.role,
    user_id: member.userId,
    created_at: isoTime(member.createdAt),
  }));
}

/** An organization as `org list --json` and the admin API give it. */
export function organizationJson(organization: OrganizationRecord): Record<string, unknown> {
  return {
    id: organization.id,
    name: organization.name,
    domain: organization.domain,
    domain_verified: organization.domainVerified,
    provider: organization.providerId,
    require_passkey: organization.requirePasskey,
    require_second_factor: organization.requireSecondFactor,
    created_at: isoTime(organization.createdAt),
    updated_at: isoTime(organization.updatedAt),
  };
}
