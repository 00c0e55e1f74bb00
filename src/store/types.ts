/**
 * The store: what the protocol needs to remember, said in the protocol's words.
 *
 * Two drivers, `sqlite/` (embedded, the default) and `postgres/` (several stateless
 * instances behind one database), run the same statements (`sql/`) and pass one contract
 * suite (`test/store/contract.ts`). Times are milliseconds since the epoch. Secrets (client
 * secrets, codes, device codes, session ids) arrive here already hashed with
 * `hashSecret`: the store never sees a bearer value.
 *
 * Every single-use or state-changing method is one conditional statement
 * (`UPDATE … WHERE … RETURNING`): no implementation reads, decides, then writes. Writes
 * that belong together share a transaction (`Store.transaction`).
 *
 * Each concept has a file of its own here (its records and its store interface: `clients.ts`,
 * `sessions.ts`, …) and one in `sql/` (its statements, its rows read back, and its store over
 * a driver). This module puts the concepts together as `Stores` and `Store`, and re-exports
 * them, so that the rest of the server imports the store from one place.
 */

import type { ClientStore } from './clients.ts';
import type { IdentityProviderStore, LinkedIdentityStore, UpstreamLoginStore } from './identity-providers.ts';
import type { AuthorizationCodeStore } from './codes.ts';
import type { DeviceAuthorizationStore } from './devices.ts';
import type { EventStore } from './events.ts';
import type { GrantStore } from './grants.ts';
import type { KeyStore } from './keys.ts';
import type { PendingSignInStore, RecoveryCodeStore, TotpStore } from './one-time-codes.ts';
import type { PasskeyStore, WebauthnChallengeStore } from './passkeys.ts';
import type { PasswordResetStore } from './password-resets.ts';
import type { PushedRequestStore } from './pushed-requests.ts';
import type { ClientAssertionStore, DpopProofStore } from './replays.ts';
import type { RateLimitStore } from './rate-limits.ts';
import type { InitialAccessTokenStore, MetadataDocumentStore, RegistrationTokenStore } from './registrations.ts';
import type { ResourceStore } from './resources.ts';
import type { SessionStore } from './sessions.ts';
import type { AccessTokenStore, RefreshTokenStore } from './tokens.ts';
import type { UserStore } from './users.ts';
import type { TrustedIssuerStore } from './trusted-issuers.ts';
import type { WebhookStore } from './webhooks.ts';
import type { MailStore } from './mail.ts';
import type { SignUpStore } from './sign-ups.ts';
import type { EmailChangeStore } from './email-changes.ts';
import type { InvitationStore } from './invitations.ts';
import type { SsfStore } from './ssf.ts';
import type { OutboxStore } from './outbox.ts';
import type { SamlLogoutStore, SamlRequestStore, SamlServiceProviderStore, SamlSessionSpStore } from './saml.ts';
import type { OrganizationStore } from './organizations.ts';
import type { GroupStore, ScimTokenStore, ScimUserStore } from './scim.ts';

export * from './clients.ts';
export * from './resources.ts';
export * from './users.ts';
export * from './sessions.ts';
export * from './grants.ts';
export * from './tokens.ts';
export * from './codes.ts';
export * from './devices.ts';
export * from './replays.ts';
export * from './pushed-requests.ts';
export * from './rate-limits.ts';
export * from './keys.ts';
export * from './password-resets.ts';
export * from './events.ts';
export * from './passkeys.ts';
export * from './one-time-codes.ts';
export * from './registrations.ts';
export * from './identity-providers.ts';
export * from './webhooks.ts';
export * from './mail.ts';
export * from './sign-ups.ts';
export * from './email-changes.ts';
export * from './invitations.ts';
export * from './ssf.ts';
export * from './outbox.ts';
export * from './saml.ts';
export * from './organizations.ts';
export * from './scim.ts';
export * from './trusted-issuers.ts';
export { DuplicateError, MissingReferenceError } from './errors.ts';

/** The stores by concern: what a flow reads and writes, and what a transaction is given. */
export interface Stores {
  readonly clients: ClientStore;
  readonly users: UserStore;
  readonly sessions: SessionStore;
  readonly grants: GrantStore;
  readonly codes: AuthorizationCodeStore;
  readonly refreshTokens: RefreshTokenStore;
  readonly accessTokens: AccessTokenStore;
  readonly devices: DeviceAuthorizationStore;
  readonly rateLimits: RateLimitStore;
  readonly keys: KeyStore;
  readonly dpopProofs: DpopProofStore;
  readonly pushedRequests: PushedRequestStore;
  readonly resources: ResourceStore;
  readonly clientAssertions: ClientAssertionStore;
  readonly passwordResets: PasswordResetStore;
  readonly events: EventStore;
  readonly passkeys: PasskeyStore;
  readonly webauthnChallenges: WebauthnChallengeStore;
  readonly totp: TotpStore;
  readonly recoveryCodes: RecoveryCodeStore;
  readonly pendingSignIns: PendingSignInStore;
  readonly registrationTokens: RegistrationTokenStore;
  readonly initialAccessTokens: InitialAccessTokenStore;
  readonly metadataDocuments: MetadataDocumentStore;
  readonly identityProviders: IdentityProviderStore;
  readonly linkedIdentities: LinkedIdentityStore;
  readonly upstreamLogins: UpstreamLoginStore;
  /** Webhooks and their outbox. */
  readonly webhooks: WebhookStore;
  /** Mail in the outbox, sent by whichever instance claims it. */
  readonly mail: MailStore;
  /** Sign-ups waiting for their e-mail link. */
  readonly signUps: SignUpStore;
  /** E-mail address changes waiting for the link mailed to the new address. */
  readonly emailChanges: EmailChangeStore;
  /** Invitations waiting to be accepted. */
  readonly invitations: InvitationStore;
  /** Shared Signals streams and their deliveries, from the same outbox. */
  readonly ssf: SsfStore;
  /** Every kind of delivery (webhooks', streams', mail), claimed, settled and replayed by the same statements. */
  readonly outbox: OutboxStore;
  /** SAML service providers and the AuthnRequest ids seen (docs/saml.md). */
  readonly samlServiceProviders: SamlServiceProviderStore;
  readonly samlRequests: SamlRequestStore;
  /** The SAML SPs sent an assertion in each session, and single logouts under way (docs/saml.md). */
  readonly samlSessionSps: SamlSessionSpStore;
  readonly samlLogouts: SamlLogoutStore;
  /** SCIM 2.0 provisioning (docs/scim.md): its tokens, what it keeps of people, and groups. */
  readonly scimTokens: ScimTokenStore;
  readonly scimUsers: ScimUserStore;
  readonly groups: GroupStore;
  /** The identity providers whose ID-JAGs this server redeems. */
  readonly trustedIssuers: TrustedIssuerStore;
  /** Organizations and their members (docs/organizations.md). */
  readonly organizations: OrganizationStore;
}

/** The longer cutoffs of `Store.purgeExpired`, each a setting of its own. */
export interface PurgeCutoffs {
  /** TESSERA_GRANT_RETENTION before now: grants that can issue nothing more. */
  readonly grantsBefore?: number;
  /** TESSERA_EVENT_RETENTION before now: audit events. */
  readonly eventsBefore?: number;
  /** TESSERA_UNUSED_REGISTRATION_RETENTION before now: self-registered clients made before it and never used. */
  readonly unusedClientsBefore?: number;
}

export interface Store extends Stores {
  /**
   * Runs `work` as one transaction, for writes that must stand or fall together (a grant
   * and its code): when `work` returns, all its writes are committed; when it throws,
   * none of them remains and its error is rethrown. `work` makes its store calls through
   * `tx` (which sees its own writes) and awaits nothing else: on SQLite, other calls wait
   * until the transaction has ended, so awaiting one inside it would never finish.
   */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
  /**
   * Deletes codes, device records, sessions, rate-limit windows, refresh tokens, password
   * reset links, revoked access-token ids, used client assertion ids, DPoP proof ids, pushed
   * requests, passkey ceremony challenges, sign-ins waiting for a one-time code and signing
   * keys that expired before `before` (the caller keeps a margin after expiry, so a replayed
   * code is still recognised as one for a while); given `grantsBefore`, grants revoked before
   * it, whose tokens all expired before it, or made before it and never used, with their
   * codes and refresh tokens; given `eventsBefore`, events older than it; given
   * `unusedClientsBefore`, self-registered clients made before it that were never used
   * (no approval, no token), with everything issued to them. Works in small
   * batches so it never holds a long lock. Returns the number of rows deleted.
   */
  purgeExpired(before: number, cutoffs?: PurgeCutoffs): Promise<number>;
  close(): Promise<void>;
}
