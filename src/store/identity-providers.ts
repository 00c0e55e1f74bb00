/**
 * Upstream identity providers: the providers an operator added, the upstream
 * identities linked to Tessera users, and the sign-ins under way at an upstream provider.
 * A concept of its own beside `types.ts`, in the same words: records are what the flows
 * mean, single use is one statement.
 */

import type { UserRecord } from './users.ts';

/** How Tessera talks to the provider: an OpenID provider, GitHub's OAuth 2.0 and API, or an LDAP directory. */
export type ProviderKind = 'oidc' | 'github' | 'ldap';

export const PROVIDER_KINDS: readonly ProviderKind[] = ['oidc', 'github', 'ldap'];

/** A provider as the operator added it (`tessera provider add`). */
export interface IdentityProviderRecord {
  /** Its name in addresses and commands: lower case letters, digits and dashes (`google`). */
  readonly id: string;
  readonly kind: ProviderKind;
  /** Shown on the sign-in page: "Continue with Google". */
  readonly name: string;
  /** Where its button stands on the sign-in page, smallest first. */
  readonly position: number;
  /**
   * Everything else the kind needs, none of it secret (an issuer, a client id, a directory's
   * search base): the flows read it through `flows/upstream/settings.ts`.
   */
  readonly settings: Readonly<Record<string, unknown>>;
  /**
   * The client secret or the directory's bind password, encrypted under the key encryption
   * key (`tokens/secret-box.ts`): the store keeps whatever object it is given, and never a
   * clear secret. Null when the provider has none.
   */
  readonly secret: Readonly<Record<string, unknown>> | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface IdentityProviderStore {
  /** Throws `DuplicateError` when the id is taken. */
  create(provider: IdentityProviderRecord): Promise<void>;
  get(id: string): Promise<IdentityProviderRecord | null>;
  /** In the order of their buttons (`position`, then id). */
  list(): Promise<IdentityProviderRecord[]>;
  /** Replaces everything but the id, kind and creation time; false for an unknown id. */
  update(provider: IdentityProviderRecord): Promise<boolean>;
  /** Removes the provider, the identities linked through it and its sign-ins under way; false when there was none. */
  remove(id: string): Promise<boolean>;
}

/** A person at an upstream provider, linked to the Tessera user they sign in as. */
export interface LinkedIdentityRecord {
  readonly providerId: string;
  /** Who they are upstream: the ID token's `sub`, GitHub's numeric user id, the directory entry's DN. */
  readonly subject: string;
  readonly userId: string;
  /** What the provider last said their name for sign-in was (an e-mail address, a login), for people to read. */
  readonly label: string | null;
  /** The groups the provider last reported (the `groups` claim); empty when it reports none. */
  readonly groups: readonly string[];
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

export interface LinkedIdentityStore {
  /** Throws `DuplicateError` when the upstream identity is linked already. */
  create(link: LinkedIdentityRecord): Promise<void>;
  get(providerId: string, subject: string): Promise<LinkedIdentityRecord | null>;
  /** The user's links, oldest first. */
  listForUser(userId: string): Promise<LinkedIdentityRecord[]>;
  /** Whether anyone signs in through the provider: whose word a change to it would move. */
  anyForProvider(providerId: string): Promise<boolean>;
  /** Records a sign-in through the link: its label, groups and time; false when it is gone. */
  recordUse(providerId: string, subject: string, use: { readonly label: string | null; readonly groups: readonly string[] }, now: number): Promise<boolean>;
  /**
   * The users whose e-mail address is this one (compared without regard to case), verified or
   * not, oldest first: a first sign-in with it may be linked to one, and never makes another.
   */
  usersWithEmail(email: string): Promise<UserRecord[]>;
  /** Unlinks one; false when there was no such link of this user. */
  remove(providerId: string, subject: string, userId: string): Promise<boolean>;
  /** Unlinks every upstream identity of the user; how many there were. */
  removeAllForUser(userId: string): Promise<number>;
}

/**
 * A sign-in sent to an upstream provider and not yet back: what the callback needs to check
 * the answer (OAuth 2.0 `state`, OIDC `nonce`, PKCE's verifier) and where to go after it.
 * Stored by `hashSecret` of the state, which only the browser that left holds (in a cookie).
 */
export interface UpstreamLoginRecord {
  readonly stateHash: string;
  readonly providerId: string;
  readonly nonce: string;
  /** RFC 7636 `code_verifier`: short-lived, used once, useless without the code. */
  readonly codeVerifier: string;
  /** A path on this server: where the browser goes once signed in. */
  readonly returnTo: string;
  /** The application the sign-in continues to, for the audit trail. */
  readonly clientId: string | null;
  /**
   * The `max_age` the provider was sent (OIDC Core §3.1.2.1), seconds; 0 with `prompt=login`:
   * the ID token's `auth_time` must be that recent. Null: the sign-in was not asked to be a new one.
   */
  readonly maxAge: number | null;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface UpstreamLoginStore {
  create(login: UpstreamLoginRecord): Promise<void>;
  /** Single use: exactly one caller receives the record, if it is unexpired at `now`; it is then gone. */
  consume(stateHash: string, now: number): Promise<UpstreamLoginRecord | null>;
}
