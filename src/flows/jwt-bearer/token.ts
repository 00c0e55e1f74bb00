/**
 * RFC 7523 §2.1 (JWT as an authorization grant), in the one profile this server redeems: the
 * Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant
 * §4.4, as the MCP enterprise profile uses it). An enterprise identity provider the operator
 * trusts (`tessera trust add`) gave a client an ID-JAG naming a person, this server and the
 * client; the client presents it (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`,
 * `assertion`) and receives an access token for the API the ID-JAG names, acting for that
 * person here, with no sign-in and no consent page: the identity provider's policy decided.
 *
 * The person is found by the rule docs/agents.md states: an upstream identity of that issuer
 * linked to them (an OpenID provider added with the same issuer), else the ID-JAG's e-mail
 * address when the identity provider says it verified it and exactly one person here has it,
 * verified too. The token issued lives while the issuer stays trusted, the client keeps the
 * grant and the person stays active (flows/lifecycle/access-token.ts); there is no refresh
 * token: the client asks the identity provider for a fresh ID-JAG.
 */
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { hashSecret } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import { clientUrlFetch } from '../../core/outbound.ts';
import { GRANT_JWT_BEARER, ID_JAG_TYP } from '../../core/protocol.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord, ResourceRecord, TrustedIssuerRecord, UserRecord } from '../../store/types.ts';
import { ClientKeySets, ClientKeysError } from '../../tokens/client-jwks.ts';
import type { TokenResponse } from '../../tokens/issue.ts';
import { ASSERTION_ALGORITHMS } from '../client-auth.ts';
import type { DpopProof } from '../dpop/proof.ts';
import { MAX_ISSUER_LENGTH, trustedIssuerUrlRule } from '../manage/trusted-issuers.ts';
import type { FlowDeps, Params, TokenGrant } from '../types.ts';

/**
 * How old an ID-JAG may be, and how long it may have been issued for, unless
 * TESSERA_ID_JAG_LIFETIME says less: the draft's are minutes long (this server issues them
 * for five); one issued for longer, or older, is refused.
 */
export const MAX_ID_JAG_LIFETIME = 300;
const maxLifetime = (deps: FlowDeps) => Math.min(deps.config.agents.idJagLifetime, MAX_ID_JAG_LIFETIME);

/** Clock difference tolerated between the identity provider and this server. */
const CLOCK_TOLERANCE = 30;

/** RFC 6749 §5.2: "invalid_grant: The provided authorization grant ... is invalid, expired, revoked ...". */
const invalid = (description: string) => new OAuthError('invalid_grant', description);

let fallbackKeys: ClientKeySets | undefined;

/** The issuer's keys: given, or fetched from its jwks_uri as the operator's rule for it allows. */
function keysOf(deps: FlowDeps, trusted: TrustedIssuerRecord): JWTVerifyGetKey {
  if (deps.issuerKeys) return deps.issuerKeys(trusted);
  fallbackKeys ??= new ClientKeySets(deps.clock, deps.config.clientAuth);
  const rule = trustedIssuerUrlRule(deps.config, trusted.addedByOwner);
  return fallbackKeys.keysFrom(trusted, rule === null ? fetch : clientUrlFetch(rule));
}

/** The checked ID-JAG's claims this grant uses. */
interface IdJag {
  readonly iss: string;
  readonly sub: string;
  readonly jti: string;
  readonly exp: number;
  readonly resource: string | null;
  readonly scope: readonly string[] | null;
  readonly email: string | null;
}

async function verifiedIdJag(deps: FlowDeps, client: ClientRecord, assertion: string): Promise<IdJag> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  let unverified: ReturnType<typeof decodeJwt>;
  try {
    header = decodeProtectedHeader(assertion);
    unverified = decodeJwt(assertion);
  } catch {
    throw invalid('assertion is not a JWT');
  }
  // §4.4.1: "The typ of the JWT indicated in the JWT header MUST be oauth-id-jag+jwt."
  if (header.typ !== ID_JAG_TYP) throw invalid(`assertion is not an ID-JAG: its typ must be ${ID_JAG_TYP}`);
  // RFC 7523 §3 item 1: "The JWT MUST contain an iss (issuer) claim"; here, one the operator trusts.
  // Nothing is verified yet: only what could be a trusted issuer's identifier is looked up, and
  // not one with a NUL character, which PostgreSQL's text cannot hold (the lookup failed as a 500).
  const iss = unverified.iss;
  if (typeof iss !== 'string' || iss === '' || iss.length > MAX_ISSUER_LENGTH || iss.includes('\u0000'))
    throw invalid(`the ID-JAG's iss must be an issuer identifier of at most ${MAX_ISSUER_LENGTH} characters, with no NUL character`);
  const trusted = await deps.store.trustedIssuers.get(iss);
  if (trusted === null) throw invalid(`the ID-JAG's issuer ${iss.slice(0, 200)} is not one this server trusts`);
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(assertion, keysOf(deps, trusted), {
      issuer: trusted.issuer,
      // RFC 7523 §3 item 3: "The JWT MUST contain an aud (audience) claim containing a value
      // that identifies the authorization server as an intended audience"; §4.4.1: its issuer.
      audience: deps.config.issuer,
      typ: ID_JAG_TYP,
      algorithms: [...ASSERTION_ALGORITHMS],
      currentDate: new Date(deps.clock.now()),
      clockTolerance: CLOCK_TOLERANCE,
      // RFC 7523 §3 item 4 (exp), and an issued-at no older than the ID-JAG may live.
      maxTokenAge: maxLifetime(deps),
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id'],
    }));
  } catch (error) {
    if (error instanceof ClientKeysError) throw invalid(`the keys of ${trusted.issuer} could not be had: ${error.message}`);
    if (error instanceof errors.JWTExpired) throw invalid('the ID-JAG has expired');
    if (error instanceof errors.JWTClaimValidationFailed) {
      if (error.claim === 'aud') throw invalid(`the ID-JAG is for another authorization server, not ${deps.config.issuer}`);
      throw invalid(`the ID-JAG's ${error.claim} claim is not acceptable: ${error.reason}`);
    }
    throw invalid(`the ID-JAG's signature does not verify with the keys of ${trusted.issuer}`);
  }
  const { sub, jti, exp, iat, client_id: clientId, resource, scope, email, email_verified: emailVerified } = payload;
  if (typeof sub !== 'string' || typeof jti !== 'string' || typeof exp !== 'number' || typeof iat !== 'number')
    throw invalid("the ID-JAG's sub, jti, exp or iat is malformed");
  if (exp - iat > maxLifetime(deps)) throw invalid(`the ID-JAG was issued for ${exp - iat} seconds: at most ${maxLifetime(deps)} (TESSERA_ID_JAG_LIFETIME)`);
  // §4.4.1: "The client_id claim MUST identify the same client as the client authentication in the request."
  if (clientId !== client.id) throw invalid('the ID-JAG was issued for another client');
  if (resource !== undefined && typeof resource !== 'string') throw invalid("the ID-JAG's resource is malformed");
  const scopes = scope === undefined ? null : typeof scope === 'string' ? parseScope(scope) : null;
  if (scope !== undefined && scopes === null) throw invalid("the ID-JAG's scope is malformed");
  return {
    iss: trusted.issuer,
    sub,
    jti,
    exp,
    resource: resource ?? null,
    scope: scopes,
    email: typeof email === 'string' && emailVerified === true ? email : null,
  };
}

/**
 * The person the ID-JAG names: the user an upstream identity of its issuer is linked to, else
 * the one person whose verified e-mail address is the ID-JAG's verified one.
 */
async function personOf(deps: FlowDeps, jag: IdJag): Promise<UserRecord | null> {
  for (const provider of await deps.store.identityProviders.list()) {
    if (provider.kind !== 'oidc' || provider.settings['issuer'] !== jag.iss) continue;
    const link = await deps.store.linkedIdentities.get(provider.id, jag.sub);
    if (link !== null) return deps.store.users.get(link.userId);
  }
  if (jag.email === null) return null;
  const verified = (await deps.store.linkedIdentities.usersWithEmail(jag.email)).filter((user) => user.emailVerified);
  return verified.length === 1 ? verified[0]! : null;
}

/** The API the token is for: the ID-JAG's `resource`, which a `resource` in the request may repeat, not change. */
async function targetOf(deps: FlowDeps, jag: IdJag, params: Params): Promise<ResourceRecord> {
  const asked = params['resource'];
  if (asked !== undefined && jag.resource !== null && asked !== jag.resource)
    throw new OAuthError('invalid_target', `the ID-JAG is for ${jag.resource}, not ${asked}`);
  const named = jag.resource ?? asked;
  if (named === undefined) throw new OAuthError('invalid_target', 'the ID-JAG names no resource, nor does the request: which API is the token for?');
  const resource = await deps.store.resources.get(named);
  if (resource === null) throw new OAuthError('invalid_target', `${named} is not an API registered here`);
  return resource;
}

async function redeem(
  deps: FlowDeps,
  client: ClientRecord,
  params: Params,
  proof: DpopProof | null,
): Promise<{ response: TokenResponse; user: UserRecord; jag: IdJag; resource: ResourceRecord }> {
  // RFC 7523 §2.1: "The value of the assertion parameter MUST contain a single JWT."
  const assertion = params['assertion'];
  if (assertion === undefined) throw new OAuthError('invalid_request', 'assertion is required: the ID-JAG');
  const jag = await verifiedIdJag(deps, client, assertion);
  const resource = await targetOf(deps, jag, params);
  // The scopes: those the ID-JAG carries (all the API's when it carries none), of this API,
  // that the client is registered for; a `scope` in the request narrows them further.
  const ceiling = resource.scopes
    .map((scope) => scope.name)
    .filter((scope) => client.scopes.includes(scope) && (jag.scope === null || jag.scope.includes(scope)));
  let scope = ceiling;
  if (params['scope'] !== undefined) {
    const asked = parseScope(params['scope']);
    if (asked === null || asked.length === 0) throw new OAuthError('invalid_scope', 'scope is malformed');
    const wider = asked.filter((value) => !ceiling.includes(value));
    if (wider.length > 0)
      throw new OAuthError('invalid_scope', `not covered by the ID-JAG, this client's registration and ${resource.identifier}: ${wider.join(' ')}`);
    scope = asked;
  }
  if (scope.length === 0) throw new OAuthError('invalid_scope', `the ID-JAG, this client's registration and ${resource.identifier} have no scope in common`);
  const user = await personOf(deps, jag);
  if (user === null)
    throw invalid(`nobody here is ${jag.sub} of ${jag.iss}: no linked identity of that issuer, and no single person with its verified e-mail address`);
  if (user.disabled) throw invalid('the person the ID-JAG names is disabled here');
  // RFC 7523 §3 item 7: "the authorization server MAY ensure that JWTs are not replayed by
  // maintaining the set of used "jti" values for the length of time for which the JWT would
  // be considered valid": once, in one statement, kept until it expires.
  const first = await deps.store.clientAssertions.use(hashSecret(`id-jag\n${jag.iss}\n${jag.jti}`), (jag.exp + CLOCK_TOLERANCE) * 1000, deps.clock.now());
  if (!first) throw invalid('the ID-JAG has been used already: ask the identity provider for a new one');
  const response = await deps.tokens.issueAsserted({ client, userId: user.id, scope, resource, assertedBy: jag.iss, dpopJkt: proof?.jkt ?? null });
  return { response, user, jag, resource };
}

export const jwtBearerGrant: TokenGrant = {
  type: GRANT_JWT_BEARER,

  async handle(deps, client, params, proof) {
    // The token endpoint has authenticated the client and checked that it is registered for
    // this grant (unauthorized_client otherwise), which only confidential clients may be.
    try {
      const { response, user, jag, resource } = await redeem(deps, client, params, proof);
      await deps.events.emit({
        type: 'token.exchanged',
        userId: user.id,
        username: user.username,
        clientId: client.id,
        detail: { grant: 'jwt-bearer', issuer: jag.iss, subject: jag.sub, resource: resource.identifier, scope: response.scope },
      });
      return response;
    } catch (error) {
      if (error instanceof OAuthError) {
        await deps.events.emit({
          type: 'token.exchange_refused',
          clientId: client.id,
          detail: { grant: 'jwt-bearer', error: error.code, reason: error.description },
        });
      }
      throw error;
    }
  },
};
