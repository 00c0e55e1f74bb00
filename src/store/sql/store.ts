/**
 * The stores by concern, written once over a driver's `Runner`, each in the file of its
 * concept (which statement each method runs, with which parameters, and how its rows
 * become records), gathered here. Each method is one statement, so single use stays one
 * conditional UPDATE on both databases.
 */

import type { PurgeCutoffs, Stores } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';
import { PURGE_BATCH_SIZE, PURGES, type StatementName } from './statements.ts';
import { clientsStores } from './clients.ts';
import { codesStores } from './codes.ts';
import { devicesStores } from './devices.ts';
import { eventsStores } from './events.ts';
import { grantsStores } from './grants.ts';
import { identityProvidersStores } from './identity-providers.ts';
import { keysStores } from './keys.ts';
import { oneTimeCodesStores } from './one-time-codes.ts';
import { passkeysStores } from './passkeys.ts';
import { passwordResetsStores } from './password-resets.ts';
import { pushedRequestsStores } from './pushed-requests.ts';
import { rateLimitsStores } from './rate-limits.ts';
import { replaysStores } from './replays.ts';
import { registrationsStores } from './registrations.ts';
import { resourcesStores } from './resources.ts';
import { sessionsStores } from './sessions.ts';
import { tokensStores } from './tokens.ts';
import { usersStores } from './users.ts';
import { trustedIssuersStores } from './trusted-issuers.ts';
import { webhooksStores } from './webhooks.ts';
import { mailStores } from './mail.ts';
import { signUpsStores } from './sign-ups.ts';
import { emailChangesStores } from './email-changes.ts';
import { invitationsStores } from './invitations.ts';
import { ssfStores } from './ssf.ts';
import { outboxStore } from './outbox.ts';
import { samlStores } from './saml.ts';
import { organizationsStores } from './organizations.ts';
import { scimStores } from './scim.ts';

export function sqlStores(d: Dialect, q: Runner<StatementName>): Stores {
  const users = usersStores(d, q);
  const grants = grantsStores(d, q);
  return {
    ...clientsStores(d, q),
    ...resourcesStores(d, q),
    ...users,
    ...sessionsStores(d, q),
    ...grants,
    ...tokensStores(d, q, { ...users, ...grants }),
    ...codesStores(d, q, { ...users, ...grants }),
    ...devicesStores(d, q),
    ...replaysStores(d, q),
    ...pushedRequestsStores(d, q),
    ...rateLimitsStores(d, q),
    ...keysStores(d, q),
    ...passwordResetsStores(d, q),
    ...eventsStores(d, q),
    ...passkeysStores(d, q),
    ...oneTimeCodesStores(d, q),
    ...registrationsStores(d, q),
    ...identityProvidersStores(d, q),
    ...webhooksStores(d, q),
    ...mailStores(d, q),
    ...signUpsStores(d, q),
    ...emailChangesStores(d, q),
    ...invitationsStores(d, q),
    ...ssfStores(d, q),
    outbox: outboxStore(d, q),
    ...samlStores(d, q),
    ...scimStores(d, q),
    ...trustedIssuersStores(d, q),
    ...organizationsStores(d, q),
  };
}

/**
 * `Store.purgeExpired`: batch after batch, each committed before the next starts (on
 * SQLite, an answer waits for its commit), so that other writers wait at most one batch.
 */
export async function purgeExpired(q: Runner<StatementName>, before: number, cutoffs: PurgeCutoffs = {}): Promise<number> {
  const purges: [StatementName, number][] = PURGES.map((name) => [name, before]);
  if (cutoffs.eventsBefore !== undefined) purges.push(['purgeEvents', cutoffs.eventsBefore]);
  // Grants last: their codes and refresh tokens go with them, and are purged by then anyway.
  if (cutoffs.grantsBefore !== undefined) purges.push(['purgeGrants', cutoffs.grantsBefore]);
  if (cutoffs.unusedClientsBefore !== undefined) purges.push(['purgeUnusedClients', cutoffs.unusedClientsBefore]);
  let deleted = 0;
  for (const [name, cutoff] of purges) {
    for (;;) {
      const count = await q.changed(name, { before: cutoff, limit: PURGE_BATCH_SIZE });
      deleted += count;
      if (count < PURGE_BATCH_SIZE) break;
    }
  }
  return deleted;
}
