/**
 * RFC 8693 (OAuth 2.0 Token Exchange): a client holding a person's access token, one this
 * server issued (to it, as an API, or to another client), asks for a token of its own for
 * another API, acting for that person. "The client ... requests a security token from the
 * authorization server's token endpoint" (§2.1) with the token it holds as `subject_token`;
 * the token issued is an RFC 9068 JWT whose `sub` is the person, `client_id` the exchanging
 * client and `act` the client acting for them (§4.1), nested when the subject token was itself
 * acted for ("A chain of delegation can be expressed by nesting one act claim within another").
 *
 * What the new token may do never exceeds what the person approved: it lives on the subject
 * token's grant (revoking that grant, or disabling the person, ends it), it carries only
 * scopes that grant holds for the API it is for, no more than any token of the chain it comes
 * from held for that API, and it expires no later than the subject token. What a client may
 * ask for is the operator's: each client lists the APIs its exchanges may be for
 * (`tessera client add --grant token-exchange --exchange-audience URI`).
 */
import { OAuthError } from '../../core/errors.ts';
import { GRANT_TOKEN_EXCHANGE, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_JAG } from '../../core/protocol.ts';
import { exchangeForIdJag } from './id-jag.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord, ResourceRecord } from '../../store/types.ts';
import { actorCount, type Actor, type ChainScope } from '../../tokens/issue.ts';
import { organizationClaims } from '../../tokens/claims.ts';
import type { DpopProof } from '../dpop/proof.ts';
import { liveAccessToken, type LiveAccessToken } from '../lifecycle/access-token.ts';
import { grantedResources, isOpenIdScope, ResourceCatalog, resourceIndicatorProblem } from '../resources.ts';
import type { FlowDeps, Params, TokenGrant } from '../types.ts';
import type { TokenResponse } from '../../tokens/issue.ts';

/**
 * RFC 8693 §2.2.2: "If the request itself is not valid or if either the subject_token or
 * actor_token are invalid for any reason, or are unacceptable based on policy, the
 * authorization server MUST construct an error response ... The value of the error parameter
 * MUST be the invalid_request error code." That includes a revoked, expired or disabled
 * person's subject token, where OAuth habit would say invalid_grant.
 */
const refused = (description: string) => new OAuthError('invalid_request', description);

/** The API the token is for: `resource` or `audience` (§2.1), one registered API this client may ask for. */
function targetOf(client: ClientRecord, catalog: ResourceCatalog, params: Params): ResourceRecord {
  const allowed = client.exchangeAudiences ?? [];
  // §2.1 resource: "A URI that indicates the target service or resource where the client
  // intends to use the requested security token"; audience: "The logical name of the target
  // service". An API here is named by its identifier either way; both must agree.
  const resource = params['resource'];
  const audience = params['audience'];
  if (resource !== undefined && audience !== undefined && resource !== audience) {
    throw new OAuthError('invalid_target', 'resource and audience name different APIs: a token here is for one API (RFC 9068 §3)');
  }
  const named = resource ?? audience ?? (allowed.length === 1 ? allowed[0] : undefined);
  if (named === undefined) throw refused('name the API the token is for with resource or audience (RFC 8693 §2.1)');
  if (resource !== undefined) {
    const problem = resourceIndicatorProblem(resource);
    if (problem) throw new OAuthError('invalid_target', `resource ${problem}`);
  }
  // §2.2.2: "If the authorization server is unwilling or unable to issue a token for any
  // target service indicated by the resource or audience parameters, the invalid_target
  // error code SHOULD be used."
  if (!allowed.includes(named))
    throw new OAuthError('invalid_target', `this client may not exchange tokens for ${named}: its exchange audiences are ${allowed.join(' ') || 'none'}`);
  const target = catalog.get(named);
  if (!target) throw new OAuthError('invalid_target', `${named} is not a registered API`);
  return target;
}

/**
 * §2.1 scope: "the scope of the requested security token". What the person approved in the
 * subject token's grant for the target API, and when a token of the chain was for the target
 * API (the subject token, or one it was exchanged from), no more than it carried: an exchange
 * narrows, never widens. A token here is for one API (RFC 9068 §3) and every API scope belongs
 * to one API, so the subject token carries none of another API's scopes; its grant says which
 * the person approved.
 */
function scopeOf(raw: string | undefined, ceiling: readonly string[], target: ResourceRecord): readonly string[] {
  if (raw === undefined) {
    if (ceiling.length === 0)
      throw new OAuthError(
        'invalid_scope',
        `no scope of ${target.identifier} to pass on: the person approved none for the subject token's authorization, or the tokens it was exchanged from held none`,
      );
    return ceiling;
  }
  const asked = parseScope(raw);
  if (asked === null || asked.length === 0) throw new OAuthError('invalid_scope', 'scope is malformed');
  const openId = asked.filter(isOpenIdScope);
  if (openId.length > 0)
    throw new OAuthError('invalid_scope', `${openId.join(' ')}: an exchanged token is for an API; OpenID scopes are for this server's own`);
  const wider = asked.filter((scope) => !ceiling.includes(scope));
  if (wider.length > 0)
    throw new OAuthError(
      'invalid_scope',
      `not covered by the subject token, or the tokens it was exchanged from, for ${target.identifier}: ${wider.join(' ')}`,
    );
  return asked;
}

/** §2.1 actor_token: "A security token that represents the identity of the acting party": here the exchanging client's own token. */
async function checkActorToken(deps: FlowDeps, client: ClientRecord, params: Params): Promise<void> {
  const token = params['actor_token'];
  const type = params['actor_token_type'];
  // §2.1 actor_token_type: "REQUIRED when the actor_token parameter is present in the
  // request but MUST NOT be included otherwise."
  if (token === undefined) {
    if (type !== undefined) throw refused('actor_token_type without actor_token');
    return;
  }
  if (type === undefined) throw refused('actor_token_type is required with actor_token');
  if (type !== TOKEN_TYPE_ACCESS_TOKEN)
    throw refused(`actor_token_type ${type} is not supported: the actor token is an access token (${TOKEN_TYPE_ACCESS_TOKEN})`);
  const actor = await liveAccessToken(deps, token);
  // The actor is the client making the request: its own client_credentials token, still
  // good. Another client's token would let any API that receives one act as its caller.
  if (!actor || actor.user !== null || actor.client.id !== client.id)
    throw refused("actor_token is not an active access token of this client's own (client_credentials)");
}

/** The subject token (§2.1 subject_token, subject_token_type), if it is a live access token for a person. */
async function subjectOf(deps: FlowDeps, params: Params): Promise<Extract<LiveAccessToken, { readonly user: object }>> {
  const token = params['subject_token'];
  const type = params['subject_token_type'];
  // §2.1: subject_token and subject_token_type are REQUIRED.
  if (token === undefined) throw refused('subject_token is required');
  if (type === undefined) throw refused('subject_token_type is required');
  if (type !== TOKEN_TYPE_ACCESS_TOKEN)
    throw refused(
      `subject_token_type ${type} is not supported: the subject token is an access token this server issued (${TOKEN_TYPE_ACCESS_TOKEN}); an ID token only for an ID-JAG (requested_token_type ${TOKEN_TYPE_ID_JAG})`,
    );
  // Signed here with a published key, unexpired, not revoked, its grant live, its person
  // active: which check failed is not said (flows/lifecycle/access-token.ts).
  const subject = await liveAccessToken(deps, token);
  if (!subject) throw refused('subject_token is not an active access token issued by this server');
  if (subject.user === null) throw refused("subject_token is a client's own token: it acts for no person");
  if (subject.claims.gid === null)
    throw refused('subject_token was redeemed for an identity assertion (ID-JAG): ask its identity provider for another instead');
  return subject;
}

/**
 * What the chain held up to and with the subject token, by API: what it held before (the
 * subject's `chain_scope`) and the subject token's own scopes for its API, the narrower where
 * both name it. A token for this server's own API (UserInfo) adds nothing: no exchange is for it.
 */
function chainScopeWith(subject: LiveAccessToken, catalog: ResourceCatalog): ChainScope {
  const chain = new Map(subject.claims.chainScope);
  if (subject.resource === null) return chain;
  const api = subject.resource.identifier;
  const own = subject.claims.scope.filter((scope) => catalog.ownerOf(scope)?.identifier === api);
  const before = chain.get(api);
  chain.set(api, before === undefined ? own : own.filter((scope) => before.includes(scope)));
  return chain;
}

async function exchange(deps: FlowDeps, client: ClientRecord, params: Params, proof: DpopProof | null): Promise<TokenResponse> {
  // §2.1 requested_token_type: "If the requested type is unspecified, the issued token type
  // is at the discretion of the authorization server": an access token, the only type here.
  const requested = params['requested_token_type'];
  // draft-ietf-oauth-identity-assertion-authz-grant §4.3: an ID token for an ID-JAG.
  if (requested === TOKEN_TYPE_ID_JAG) return exchangeForIdJag(deps, client, params, refused);
  if (requested !== undefined && requested !== TOKEN_TYPE_ACCESS_TOKEN)
    throw refused(
      `requested_token_type ${requested} is not supported: this server issues access tokens (${TOKEN_TYPE_ACCESS_TOKEN}) and ID-JAGs (${TOKEN_TYPE_ID_JAG})`,
    );

  const subject = await subjectOf(deps, params);
  await checkActorToken(deps, client, params);
  // §4.1: "The outermost act claim represents the current actor while nested act claims
  // represent prior actors": this client, then whoever acted before it.
  const act: Actor = subject.claims.act === null ? { sub: client.id } : { sub: client.id, act: subject.claims.act };
  // TESSERA_TOKEN_EXCHANGE_MAX_ACTORS (4): an agent acting for a service acting for a person
  // is three; a longer chain is more likely a loop between services than a design.
  const maxActors = deps.config.agents.maxActors;
  if (actorCount(act) > maxActors)
    throw refused(`the delegation chain would name ${actorCount(act)} actors: at most ${maxActors} (TESSERA_TOKEN_EXCHANGE_MAX_ACTORS)`);

  const catalog = new ResourceCatalog(await deps.store.resources.list());
  const target = targetOf(client, catalog, params);
  const grant = await deps.store.grants.get(subject.claims.gid!);
  // Read again after the subject token was checked: revoked in between, it ends here.
  if (!grant || grant.revokedAt !== null) throw refused('subject_token is not an active access token issued by this server');
  // The person approved this API for the grant (registered before the approval, as
  // grantedResources says), or the grant holds none of its scopes to pass on.
  const covered = grantedResources(catalog, { scope: grant.scope, createdAt: grant.renewedAt ?? grant.createdAt }).resources.includes(target);
  const approved = covered ? grant.scope.filter((scope) => catalog.ownerOf(scope) === target) : [];
  // §2.1 leaves what an exchanged token may do to the server: "the exchange is a one-time event
  // and does not create a tight linkage between the input and output tokens". §5: "Any time one
  // principal is delegated the rights of another principal, the potential for abuse is a
  // concern. The use of the "scope" claim ... is suggested to mitigate potential for such
  // abuse". So the narrowing holds along the chain, not only against the subject token: an API
  // an earlier token was for gets no more than that token held, or a detour through another API
  // (prints, then ledger, then prints again) would win back what the first exchange left out.
  // A chain exchanged before tokens carried `chain_scope` narrows by its subject token alone.
  const chainScope = chainScopeWith(subject, catalog);
  const held = chainScope.get(target.identifier);
  const ceiling = held === undefined ? approved : approved.filter((scope) => held.includes(scope));
  const scope = scopeOf(params['scope'], ceiling, target);

  const response = await deps.tokens.issueExchanged({
    client,
    userId: subject.user.id,
    grantId: grant.id,
    scope,
    resource: target,
    act,
    chainScope,
    // Never past the subject token's own expiry.
    notAfter: subject.claims.exp,
    // RFC 9449 §5: a proof with the request binds the token to its key.
    dpopJkt: proof?.jkt ?? null,
    // The organization the person chose for the approval acts on in the exchanged token, as in
    // the subject token: an API that decides by org_id sees the same one downstream. Read from
    // the grant and the membership now, not the subject token: a person who left it since
    // carries none.
    organization: await organizationClaims(deps.store, grant.organizationId, subject.user.id, grant.scope),
  });
  await deps.events.emit({
    type: 'token.exchanged',
    userId: subject.user.id,
    username: subject.user.username,
    clientId: client.id,
    grantId: grant.id,
    detail: { subject_client: subject.claims.client_id, resource: target.identifier, scope: scope.join(' '), act: actorSubs(act) },
  });
  return response;
}

/** The actors of a chain, the current one first, as the event shows them. */
const actorSubs = (act: Actor | undefined): string => (act ? [act.sub, actorSubs(act.act)].filter(Boolean).join(' ') : '');

export const tokenExchangeGrant: TokenGrant = {
  type: GRANT_TOKEN_EXCHANGE,

  async handle(deps, client, params, proof) {
    // The token endpoint has authenticated the client and checked that it is registered for
    // this grant (unauthorized_client otherwise); registration allows it to confidential
    // clients with at least one exchange audience (flows/manage/clients.ts).
    try {
      return await exchange(deps, client, params, proof);
    } catch (error) {
      if (error instanceof OAuthError) {
        await deps.events.emit({ type: 'token.exchange_refused', clientId: client.id, detail: { error: error.code, reason: error.description } });
      }
      throw error;
    }
  },
};
