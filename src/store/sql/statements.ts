/**
 * Every statement of the store, written once, in the file of its concept (`clients.ts`,
 * `sessions.ts`, …) and gathered here by name. Parameters are named (`:hash`) in the SQL
 * text; each driver compiles them to its own form (SQLite binds the names, PostgreSQL
 * numbers them). The little that differs between the databases comes from the `Dialect`.
 */

import type { Dialect } from './dialect.ts';
import { clientsStatements } from './clients.ts';
import { codesStatements } from './codes.ts';
import { devicesStatements } from './devices.ts';
import { eventsStatements } from './events.ts';
import { grantsStatements } from './grants.ts';
import { identityProvidersStatements } from './identity-providers.ts';
import { keysStatements } from './keys.ts';
import { oneTimeCodesStatements } from './one-time-codes.ts';
import { passkeysStatements } from './passkeys.ts';
import { passwordResetsStatements } from './password-resets.ts';
import { pushedRequestsStatements } from './pushed-requests.ts';
import { rateLimitsStatements } from './rate-limits.ts';
import { replaysStatements } from './replays.ts';
import { registrationsStatements } from './registrations.ts';
import { resourcesStatements } from './resources.ts';
import { sessionsStatements } from './sessions.ts';
import { tokensStatements } from './tokens.ts';
import { usersStatements } from './users.ts';
import { trustedIssuersStatements } from './trusted-issuers.ts';
import { webhooksStatements } from './webhooks.ts';
import { mailStatements } from './mail.ts';
import { signUpsStatements } from './sign-ups.ts';
import { emailChangesStatements } from './email-changes.ts';
import { invitationsStatements } from './invitations.ts';
import { ssfStatements } from './ssf.ts';
import { outboxStatements } from './outbox.ts';
import { samlStatements } from './saml.ts';
import { scimStatements } from './scim.ts';
import { organizationsStatements } from './organizations.ts';

/** Rows deleted per statement by `purgeExpired`: small enough that no statement holds its lock for long. */
export const PURGE_BATCH_SIZE = 1000;

/** The statements, by name, in `dialect`'s SQL. */
export function statements(d: Dialect) {
  return {
    ...clientsStatements(d),
    ...resourcesStatements(d),
    ...usersStatements(d),
    ...sessionsStatements(d),
    ...grantsStatements(d),
    ...tokensStatements(d),
    ...codesStatements(d),
    ...devicesStatements(d),
    ...replaysStatements(d),
    ...pushedRequestsStatements(d),
    ...rateLimitsStatements(d),
    ...keysStatements(d),
    ...passwordResetsStatements(d),
    ...eventsStatements(d),
    ...passkeysStatements(d),
    ...oneTimeCodesStatements(d),
    ...registrationsStatements(d),
    ...identityProvidersStatements(d),
    ...webhooksStatements(d),
    ...mailStatements(d),
    ...signUpsStatements(d),
    ...emailChangesStatements(d),
    ...invitationsStatements(d),
    ...ssfStatements(d),
    ...outboxStatements(d),
    ...samlStatements(d),
    ...scimStatements(d),
    ...trustedIssuersStatements(d),
    ...organizationsStatements(d),
  };
}

export type StatementName = keyof ReturnType<typeof statements>;

/** What `purgeExpired` runs, each in batches of `PURGE_BATCH_SIZE` until one comes back short. */
export const PURGES = [
  'purgeCodes',
  'purgeDevices',
  'purgeSessions',
  'purgeRateLimits',
  'purgeRefreshTokens',
  'purgeRevokedAccessTokens',
  'purgeClientAssertions',
  'purgeSessionClients',
  'purgeWebauthnChallenges',
  'purgePendingSignIns',
  'purgeDpopProofs',
  'purgePushedRequests',
  'purgeKeys',
  'purgePasswordResets',
  'purgeInitialAccessTokens',
  'purgeMetadataDocuments',
  'purgeUpstreamLogins',
  'purgeSamlRequests',
  'purgeSamlSessionSps',
  'purgeSamlLogouts',
  'purgeSignUps',
  'purgeEmailChanges',
  'purgeInvitations',
] as const satisfies readonly StatementName[];
