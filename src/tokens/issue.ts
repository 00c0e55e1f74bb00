import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import type { Lifetimes } from '../config/index.ts';
import type { ClientRecord, SigningAlgorithm, UserRecord } from '../store/types.ts';
import { signJws } from './jws.ts';
import type { KeyManager } from './keys.ts';

/** The successful token response (RFC 6749 §5.1, OIDC Core §3.1.3.3). Wire names, readonly. */
export interface TokenResponse {
  readonly access_token: string;
  readonly token_type: 'Bearer';
  readonly expires_in: number;
  readonly scope: string;
  readonly id_token?: string;
  readonly refresh_token?: string;
}

/** What an approval that is being redeemed carries into the tokens. */
export interface Issuance {
  readonly client: ClientRecord;
  readonly user: UserRecord;
  readonly scope: readonly string[];
  readonly grantId: string;
  /** OIDC `auth_time`, ms. */
  readonly authTime: number;
  /** From the authorization request; absent in the device flow. */
  readonly nonce?: string | null;
}

/** The claims each standard scope releases (OIDC Core §5.4), from the user record. */
export function scopeClaims(user: UserRecord, scope: readonly string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  if (scope.includes('profile')) {
    claims['preferred_username'] = user.username;
    if (user.name !== null) claims['name'] = user.name;
  }
  if (scope.includes('email') && user.email !== null) {
    claims['email'] = user.email;
    claims['email_verified'] = user.emailVerified;
  }
  return claims;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** Signs access tokens (RFC 9068 JWTs) and ID tokens (OIDC Core §2). */
export class TokenIssuer {
  readonly #keys: KeyManager;
  readonly #clock: Clock;
  readonly #issuer: string;
  readonly #lifetimes: Lifetimes;
  readonly #accessTokenAlg: SigningAlgorithm;

  constructor(keys: KeyManager, clock: Clock, issuer: string, lifetimes: Lifetimes, accessTokenAlg: SigningAlgorithm = 'ES256') {
    this.#keys = keys;
    this.#clock = clock;
    this.#issuer = issuer;
    this.#lifetimes = lifetimes;
    this.#accessTokenAlg = accessTokenAlg;
  }

  async issue(issuance: Issuance): Promise<TokenResponse> {
    const now = seconds(this.#clock.now());
    const scope = issuance.scope.join(' ');
    const [accessToken, idToken] = await Promise.all([
      this.#accessToken(issuance, now, scope),
      issuance.scope.includes('openid') ? this.#idToken(issuance, now) : undefined,
    ]);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: this.#lifetimes.accessToken,
      scope,
      ...(idToken === undefined ? {} : { id_token: idToken }),
    };
  }

  /** RFC 9068 §2.2: iss, exp, aud, sub, client_id, iat, jti, with scope and auth_time. */
  async #accessToken(issuance: Issuance, now: number, scope: string): Promise<string> {
    const key = await this.#keys.signingKey(this.#accessTokenAlg);
    return signJws({ alg: key.alg, kid: key.kid, typ: 'at+jwt' }, {
      client_id: issuance.client.id,
      scope,
      auth_time: seconds(issuance.authTime),
      // Lets introspection and revocation find the approval this token came from.
      gid: issuance.grantId,
      iss: this.#issuer,
      // Without a resource indicator, the resource is this server's own API (userinfo).
      aud: this.#issuer,
      sub: issuance.user.id,
      iat: now,
      exp: now + this.#lifetimes.accessToken,
      jti: randomUUID(),
    }, key.privateKey);
  }

  /** OIDC Core §2 and §3.1.3.6. */
  async #idToken(issuance: Issuance, now: number): Promise<string> {
    const key = await this.#keys.signingKey('RS256');
    const payload: Record<string, unknown> = {
      ...scopeClaims(issuance.user, issuance.scope),
      auth_time: seconds(issuance.authTime),
      azp: issuance.client.id,
    };
    if (issuance.nonce) payload['nonce'] = issuance.nonce;
    return signJws({ alg: key.alg, kid: key.kid, typ: 'JWT' }, {
      ...payload,
      iss: this.#issuer,
      aud: issuance.client.id,
      sub: issuance.user.id,
      iat: now,
      exp: now + this.#lifetimes.idToken,
    }, key.privateKey);
  }
}
