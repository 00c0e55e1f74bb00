/**
 * SAML 2.0 service providers (docs/saml.md): the applications that sign people in through
 * Tessera with SAML rather than OpenID Connect, and the ids of the AuthnRequests accepted from
 * them, each once (SAML Core §3.2.1: "ID ... The identifier for this request").
 */

/** How the subject of an assertion is named to an SP (SAML Core §8.3). */
export type NameIdFormat = 'email' | 'persistent' | 'transient';
export const NAME_ID_FORMATS: readonly NameIdFormat[] = ['email', 'persistent', 'transient'];

export interface SamlServiceProviderRecord {
  /** Given by the server: the SP's entity ID is a URI, awkward in a path. */
  readonly id: string;
  /** Its entity ID (SAML Metadata §2.3.2 entityID): the assertion's audience. Unique, never changed (another entity is another SP). */
  readonly entityId: string;
  /** What the consent and error pages call it; null: its entity ID. */
  readonly name: string | null;
  /** Its AssertionConsumerService URLs (HTTP-POST): a response goes only to one of these. */
  readonly acsUrls: readonly string[];
  /** Its SingleLogoutService URL (HTTP-Redirect or HTTP-POST), if it takes part in single logout. */
  readonly sloUrl: string | null;
  readonly nameIdFormat: NameIdFormat;
  /** The assertion's attributes: attribute name to the claim (OIDC Core §5.1) whose value it carries. */
  readonly attributes: Readonly<Record<string, string>>;
  /** Its AuthnRequests (and LogoutRequests) must be signed, with `certificate`'s key. */
  readonly wantSignedRequests: boolean;
  /** The Response is signed too, not only the assertion. */
  readonly signResponse: boolean;
  /** Its signing certificate (PEM), which its signed requests are checked with. */
  readonly certificate: string | null;
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
