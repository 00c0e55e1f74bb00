/**
 * Signing in through an upstream identity provider: the browser is sent to the
 * provider and comes back (OpenID Connect, GitHub), or the password is checked by a
 * directory (LDAP). Either way the proof ends in the one session flow (flows/session/): the
 * person is signed in, or asked for their one-time code first, as after a password. Every
 * refusal is a `signin.failed` event naming the provider, with the reason and the
 * provider's detail, and a page in the person's words (http/upstream.ts).
 */
import { constantTimeEqual, hashSecret } from '../../core/crypto.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { UserRecord } from '../../store/types.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { cookieNames, usableCookie } from '../session/cookies.ts';
import type { Browser } from '../session/session.ts';
import { afterFirstStep } from '../session/sign-in.ts';
import { checkDirectoryPassword, type Busy, type Limited, type PasswordCheckDeps } from '../sign-in.ts';
import type { FlowDeps } from '../types.ts';
import { accountFor, joinOrganizationOfProvider, methodsFor, type UpstreamIdentity, type UpstreamRefusal } from './accounts.ts';
import { beginGithub, finishGithub } from './github.ts';
import { checkLdapPassword } from './ldap.ts';
import { beginOidc, finishOidc, UpstreamFailure, type UpstreamChecks, type UpstreamStartOptions } from './oidc.ts';
import { providerSettings } from './settings.ts';

export interface UpstreamDeps extends FlowDeps, PasswordCheckDeps {
  readonly secrets: SecretBox;
}

/** Where the sign-in goes on to, carried from the sign-in page through the provider and back. */
export interface UpstreamContinuation {
  /** A path on this server (checked by the HTTP layer). */
  readonly returnTo: string;
  readonly clientId: string | null;
}

export type Refused = { readonly kind: 'refused'; readonly reason: UpstreamRefusal; readonly provider: string | null };

export type UpstreamStart =
  /** Send the browser to the provider. */
  | { readonly kind: 'redirect'; readonly url: string }
  /** A directory: its own password form. */
  | { readonly kind: 'password-form'; readonly provider: IdentityProviderRecord }
  | Refused;

export type UpstreamOutcome =
  | { readonly kind: 'signed-in' | 'second-factor'; readonly user: UserRecord; readonly continuation: UpstreamContinuation }
  | (Refused & { readonly continuation: UpstreamContinuation | null });

/** The provider's detail, short enough for an event. */
const detailOf = (failure: UpstreamFailure) => failure.detail.slice(0, 200);

async function refuse(
  deps: UpstreamDeps,
  browser: Browser,
  provider: IdentityProviderRecord | null,
  reason: UpstreamRefusal,
  extra: { readonly detail?: string; readonly user?: UserRecord | undefined; readonly username?: string | null; readonly clientId?: string | null } = {},
): Promise<Refused> {
  await deps.events.forRequest({ ip: browser.ip, userAgent: browser.userAgent }).emit({
    type: 'signin.failed',
    userId: extra.user?.id ?? null,
    username: extra.user?.username ?? extra.username ?? null,
    clientId: extra.clientId ?? null,
    detail: { reason, provider: provider?.id ?? null, ...(extra.detail ? { upstream: extra.detail } : {}) },
  });
  return { kind: 'refused', reason, provider: provider?.name ?? null };
}

/**
 * The provider the operator made the only way in (`--only`), if any: then no password is
 * checked here, and the sign-in page sends everyone to it.
 */
export async function onlyProvider(deps: Pick<FlowDeps, 'store'>): Promise<IdentityProviderRecord | null> {
  return (await deps.store.identityProviders.list()).find((provider) => providerSettings(provider).only) ?? null;
}

/**
 * Starts a sign-in through provider `id`: for an OpenID provider or GitHub, the sign-in
 * under way is stored by the hash of its state, which the browser keeps in a cookie, and the
 * browser is sent upstream; a directory asks for the password on its own form. An OpenID
 * provider is asked for a new sign-in when `options.maxAge` says one is needed.
 */
export async function startUpstream(
  deps: UpstreamDeps,
  browser: Browser,
  id: string,
  continuation: UpstreamContinuation,
  options: UpstreamStartOptions = {},
): Promise<UpstreamStart> {
  const provider = await deps.store.identityProviders.get(id);
  if (!provider) return refuse(deps, browser, null, 'unknown_provider', { clientId: continuation.clientId });
  const settings = providerSettings(provider);
  if (settings.kind === 'ldap') return { kind: 'password-form', provider };
  let begun: { readonly url: URL; readonly checks: UpstreamChecks };
  try {
    begun = settings.kind === 'oidc' ? await beginOidc(deps, provider, settings, options) : await beginGithub(deps, provider, settings);
  } catch (error) {
    if (!(error instanceof UpstreamFailure)) throw error;
    return refuse(deps, browser, provider, error.reason, { detail: detailOf(error), clientId: continuation.clientId });
  }
  const now = deps.clock.now();
  const lifetime = deps.config.upstream.signInTimeout;
  await deps.store.upstreamLogins.create({
    stateHash: hashSecret(begun.checks.state),
    providerId: provider.id,
    nonce: begun.checks.nonce,
    codeVerifier: begun.checks.codeVerifier,
    returnTo: continuation.returnTo,
    clientId: continuation.clientId,
    maxAge: begun.checks.maxAge,
    createdAt: now,
    expiresAt: now + lifetime * 1000,
  });
  browser.cookies.set(cookieNames(deps.config).upstream, begun.checks.state, lifetime);
  return { kind: 'redirect', url: begun.url.href };
}

/**
 * The browser is back from provider `id` at `callback` (the whole URL). The answer counts
 * only in the browser that left (its cookie holds the state) and only once (the sign-in
 * under way is used up); then the provider's answer is checked, the account found, made or
 * linked, and the person signed in through the session flow.
 */
export async function finishUpstream(deps: UpstreamDeps, browser: Browser, id: string, callback: URL): Promise<UpstreamOutcome> {
  const name = cookieNames(deps.config).upstream;
  const kept = browser.cookies.read(name);
  browser.cookies.clear(name);
  const state = callback.searchParams.get('state') ?? '';
  const provider = await deps.store.identityProviders.get(id);
  // RFC 6749 §10.12: an answer that did not start in this browser (login CSRF) is refused.
  if (!usableCookie(kept) || !state || !constantTimeEqual(kept, state)) {
    return { ...(await refuse(deps, browser, provider, 'state_mismatch')), continuation: null };
  }
  const login = await deps.store.upstreamLogins.consume(hashSecret(state), deps.clock.now());
  if (!login || login.providerId !== id) return { ...(await refuse(deps, browser, provider, 'expired')), continuation: null };
  const continuation = { returnTo: login.returnTo, clientId: login.clientId };
  if (!provider) return { ...(await refuse(deps, browser, null, 'unknown_provider', { clientId: login.clientId })), continuation };
  const settings = providerSettings(provider);
  let identity: UpstreamIdentity;
  try {
    const checks = { state, nonce: login.nonce, codeVerifier: login.codeVerifier, maxAge: login.maxAge };
    if (settings.kind === 'oidc') identity = await finishOidc(deps, provider, settings, callback, checks);
    else if (settings.kind === 'github') identity = await finishGithub(deps, provider, settings, callback, checks);
    else return { ...(await refuse(deps, browser, provider, 'unknown_provider', { clientId: login.clientId })), continuation };
  } catch (error) {
    if (!(error instanceof UpstreamFailure)) throw error;
    return { ...(await refuse(deps, browser, provider, error.reason, { detail: detailOf(error), clientId: login.clientId })), continuation };
  }
  // Asked for a new sign-in (max_age=0, with prompt=login), an OpenID provider's answer passed
  // openid-client's max_age check (OIDC Core §3.1.3.7: "the auth_time Claim value [...] request
  // re-authentication if it determines too much time has elapsed"): a sign-in made after this
  // one started.
  const newSince = settings.kind === 'oidc' && login.maxAge === 0 ? login.createdAt : null;
  return { ...(await signInAs(deps, browser, provider, identity, login.clientId, newSince)), continuation } as UpstreamOutcome;
}

/**
 * The account of `identity`, then the session flow: signed in, or asked for a one-time code.
 * `newSince`: when the sign-in upstream started, where the provider's answer was checked to be
 * a new sign-in (max_age=0); null otherwise.
 */
async function signInAs(
  deps: UpstreamDeps,
  browser: Browser,
  provider: IdentityProviderRecord,
  identity: UpstreamIdentity,
  clientId: string | null,
  newSince: number | null = null,
): Promise<{ readonly kind: 'signed-in' | 'second-factor'; readonly user: UserRecord } | Refused> {
  const account = await accountFor(deps, provider, providerSettings(provider), identity);
  if (account.kind === 'refused') return refuse(deps, browser, provider, account.reason, { user: account.user, username: identity.label, clientId });
  await joinOrganizationOfProvider(deps, provider, identity, account.user);
  // The session's auth_time is when the person last proved who they are, which a provider's
  // answer is not: its own session may sign them in without a word. So it is the time the
  // provider reports. Where it reports none (GitHub), now: keeping the time of this browser's
  // session instead protected nothing (whoever is at the browser signs out, then in again
  // through the same provider session) and left a person who signs in through GitHub alone
  // asked again at every round, a redirect loop where GitHub is the only way in.
  const reported = identity.authTime ?? deps.clock.now();
  // A new sign-in asked for is dated no earlier than the start that asked for it. The
  // provider's auth_time is in whole seconds by its own clock, which openid-client allows to
  // be behind (its clock tolerance): a quick sign-in there can be dated before the start here,
  // and prompt=login, SAML ForceAuthn and the like, which want a sign-in made after they asked
  // (session.authTime >= the time they asked), would then ask again at every round.
  const authTime = newSince === null ? reported : Math.max(reported, newSince);
  // The session records what the provider proved, no more (RFC 8176 has no "federated"
  // value): a directory's password is `pwd`, an OpenID provider's word is its known `amr`
  // values (its `mfa` only where the operator trusts it, and never for a console role
  // holder), GitHub's is nothing. One-time codes
  // and the second-factor policy (flows/second-factor/policy.ts) apply on top.
  const next = await afterFirstStep(deps, browser, account.user, methodsFor(account.user, identity), { clientId }, { authTime });
  return { kind: next, user: account.user };
}

export type DirectoryOutcome =
  | { readonly kind: 'signed-in' | 'second-factor'; readonly user: UserRecord; readonly browserToken: string }
  | { readonly kind: 'wrong' }
  | Limited
  | Busy
  | Refused;

/**
 * A username and password for directory `id` (LDAP): checked by the directory under the
 * limits and queue of every password (flows/sign-in.ts), then the account and the session.
 */
export async function signInWithDirectory(
  deps: UpstreamDeps,
  browser: Browser,
  id: string,
  attempt: { readonly username: string; readonly password: string; readonly browserToken: string | null; readonly clientId: string | null },
): Promise<DirectoryOutcome> {
  const provider = await deps.store.identityProviders.get(id);
  const settings = provider ? providerSettings(provider) : null;
  if (!provider || settings?.kind !== 'ldap') return refuse(deps, browser, provider, 'unknown_provider', { clientId: attempt.clientId });
  const events = deps.events.forRequest({ ip: browser.ip, userAgent: browser.userAgent });
  let checked: Awaited<ReturnType<typeof checkDirectoryPassword<UpstreamIdentity | null>>>;
  try {
    checked = await checkDirectoryPassword(
      { ...deps, events },
      {
        username: attempt.username,
        password: attempt.password,
        ip: browser.ip,
        browser: attempt.browserToken,
        clientId: attempt.clientId,
        provider: provider.id,
      },
      (username, password) => checkLdapPassword(deps, provider, settings, username, password),
    );
  } catch (error) {
    if (!(error instanceof UpstreamFailure)) throw error;
    return refuse(deps, browser, provider, error.reason, { detail: detailOf(error), username: attempt.username.slice(0, 256), clientId: attempt.clientId });
  }
  if (checked.kind !== 'right') return checked;
  const signedIn = await signInAs(deps, browser, provider, checked.found!, attempt.clientId);
  return signedIn.kind === 'refused' ? signedIn : { ...signedIn, browserToken: checked.browser };
}
