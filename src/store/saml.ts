/**
 * SAML 2.0 service providers (docs/saml.md): the applications that sign people in through
 * Tessera with SAML rather than OpenID Connect, and the ids of the AuthnRequests accepted from
 * them, each once (SAML Core §3.2.1: "ID ... The identifier for this request").
 */

/** How the subject of an assertion is named to an SP (SAML Core §8.3). */
export type NameIdFormat = 'email' | 'persistent' | 'transient';
export const NAME_ID_FORMATS: readonly NameIdFormat[] = ['email', 'persistent', 'transient'];
/** The AssertionConsumerServiceIndex of each of `acsUrls` when they were given as a list: its position, from 0. */
export const acsIndexesByPosition = (acsUrls: readonly string[]): Record<string, string> =>
  Object.fromEntries(acsUrls.map((url, index) => [String(index), url]));

/** How an SP's SingleLogoutService takes a LogoutRequest or LogoutResponse (SAML Bindings §3.4, §3.5). */
export type SloBinding = 'redirect' | 'post';
export const SLO_BINDINGS: readonly SloBinding[] = ['redirect', 'post'];

export interface SamlServiceProviderRecord {
  /** Given by the server: the SP's entity ID is a URI, awkward in a path. */
  readonly id: string;
  /** Its entity ID (SAML Metadata §2.3.2 entityID): the assertion's audience. Unique, never changed (another entity is another SP). */
  readonly entityId: string;
  /** What the consent and error pages call it; null: its entity ID. */
  readonly name: string | null;
  /** Its AssertionConsumerService URLs (HTTP-POST): a response goes only to one of these. */
  readonly acsUrls: readonly string[];
  /**
   * What an AuthnRequest's AssertionConsumerServiceIndex (SAML Core §3.4.1) names: each index,
   * as decimal text, to one of `acsUrls`. The indexes its metadata gave them (SAML Metadata
   * §2.2.3), or, for URLs given as a list, each one's position in it, from 0.
   */
  readonly acsIndexes: Readonly<Record<string, string>>;
  /** Its SingleLogoutService URL (HTTP-Redirect or HTTP-POST), if it takes part in single logout. */
  readonly sloUrl: string | null;
  /** The binding its SingleLogoutService URL takes: HTTP-Redirect (the default) or HTTP-POST. */
  readonly sloBinding: SloBinding;
  readonly nameIdFormat: NameIdFormat;
  /** The assertion's attributes: attribute name to the claim (OIDC Core §5.1) whose value it carries. */
  readonly attributes: Readonly<Record<string, string>>;
  /** Its AuthnRequests (and LogoutRequests) must be signed, with `certificate`'s key. */
  readonly wantSignedRequests: boolean;
  /** The Response is signed too, not only the assertion. */
  readonly signResponse: boolean;
  /**
   * It takes sign-ins started at this IdP (/saml/initiate): a Response that answers no request
   * of its own (SAML Profiles §4.1.5, "unsolicited"), which an SP accepts only when it means to.
   */
  readonly idpInitiated: boolean;
  /** Its signing certificate (PEM), which its signed requests are checked with. */
  readonly certificate: string | null;
  /** Its encryption certificate (PEM, an RSA key): its assertions are encrypted for it (SAML Core §2.3.4 EncryptedAssertion). Null: sent in the clear. */
  readonly encryptionCertificate: string | null;
  /**
   * The key of its persistent NameIDs (HMAC-SHA256 of the person's id): random when it is
   * added and never changed, so that each SP knows a person by an id of its own, which no
   * other SP can link to theirs (SAML Core §8.3.7), and which stays while the SP does.
   */
  readonly nameIdSalt: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface SamlServiceProviderStore {
  /** Throws DuplicateError when the id or the entity ID is taken. */
  create(sp: SamlServiceProviderRecord): Promise<void>;
  get(id: string): Promise<SamlServiceProviderRecord | null>;
  byEntityId(entityId: string): Promise<SamlServiceProviderRecord | null>;
  list(): Promise<SamlServiceProviderRecord[]>;
  /** Writes every field but the id, the entity ID and createdAt; false when there is none with the id. */
  update(sp: SamlServiceProviderRecord): Promise<boolean>;
  remove(id: string): Promise<boolean>;
}

/** The AuthnRequest ids accepted, per SP, kept until the request could no longer be accepted. */
export interface SamlRequestStore {
  /**
   * Records the request `key` (`hashSecret` of the SP's entity ID and the request's ID) until
   * `expiresAt`: true for exactly one caller, false when it is recorded and unexpired at `now`.
   */
  use(key: string, expiresAt: number, now: number): Promise<boolean>;
}

/**
 * An SP sent an assertion in a session (SAML Profiles §4.4: a "session participant"), and
 * how it was told of the person and the session: what a LogoutRequest to it names.
 */
export interface SamlSessionSpRecord {
  /** The session's OIDC `sid`, the assertion's SessionIndex. */
  readonly sid: string;
  readonly spId: string;
  /** The NameID the SP was given (a transient one cannot be made again). */
  readonly nameId: string;
  /** Its Format, a URI (SAML Core §8.3). */
  readonly nameIdFormat: string;
  readonly sessionIndex: string;
  /** When the session would have expired: the record is of no use after. */
  readonly expiresAt: number;
}

/** The SAML SPs of each session, recorded at each assertion and taken when the session ends. */
export interface SamlSessionSpStore {
  /** Records that `record.spId` was sent an assertion in `record.sid`; a later one for the same pair replaces it. */
  join(record: SamlSessionSpRecord): Promise<void>;
  /** The SPs of `sid`, removed: each is returned to exactly one caller, whoever else ends the same session. */
  take(sid: string): Promise<SamlSessionSpRecord[]>;
}

/**
 * Single logouts under way (SAML Profiles §4.4.3.3): what is left of one, kept by the hash of
 * the ID of the LogoutRequest it waits on an answer to, so that the answer (its InResponseTo)
 * finds it, once.
 */
export interface SamlLogoutStore {
  save(requestHash: string, chain: Readonly<Record<string, unknown>>, expiresAt: number): Promise<void>;
  /** The logout waiting on `requestHash`, removed: for exactly one caller, null when there is none or it expired before `now`. */
  take(requestHash: string, now: number): Promise<Record<string, unknown> | null>;
}
