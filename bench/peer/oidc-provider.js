/**
 * The peer the benchmark compares Tessera with: node-oidc-provider 9.x, configured as its
 * README and defaults recommend for the same flows: one confidential client authenticating
 * with client_secret_basic, PKCE required (S256), the device flow feature on, RS256 ID
 * tokens (its default), and its default in-memory adapter, sized to hold a batch. For the client_credentials
 * scenario, one API (resource indicators, its documented way to issue JWT access tokens for
 * an API) with one scope, its access tokens RS256 JWTs as Tessera's are for an API. For the
 * refresh scenario, refresh tokens rotated at every use, as Tessera rotates them. Started
 * by bench/run.ts with PORT, BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, BENCH_REDIRECT_URI,
 * BENCH_API and BENCH_API_SCOPE in the environment.
 *
 * Plain JavaScript: it runs against bench/node_modules, which Tessera's type check never
 * sees. Minting codes needs the provider's own models, so the driver asks for them over IPC.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const clientId = process.env.BENCH_CLIENT_ID;
const clientSecret = process.env.BENCH_CLIENT_SECRET;
const redirectUri = process.env.BENCH_REDIRECT_URI;
const api = process.env.BENCH_API;
const apiScope = process.env.BENCH_API_SCOPE;

// The default adapter keeps its last 1,000 entries (an LRU). A batch of N exchanges holds 3N:
// the grants, the codes and the access tokens they become; a batch larger than about 300
// then lost codes to eviction before they were used. The bench gives the same adapter a
// store sized to its batch (BENCH_STORE_SIZE, never below the default).
const store = new LRU({ maxSize: Math.max(1000, Number(process.env.BENCH_STORE_SIZE) || 0) });
const adapter = (model) => new MemoryAdapter(model, store);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-rs256', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  adapter,
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      client_name: 'Bench',
      redirect_uris: [redirectUri],
      response_types: ['code'],
      grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'client_credentials', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
  ],
  jwks: { keys: [signingKey] },
  // A fixed cookie key, as production deployments must set one.
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  pkce: { required: () => true },
  // Every refresh rotates its token, as Tessera's always do (RFC 9700 §4.14.2). Its default
  // rotates a confidential client's only past 70% of the token's life: less work a refresh.
  rotateRefreshToken: () => true,
  features: {
    deviceFlow: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client_credentials request naming no resource is for the one API.
      defaultResource: () => api,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resourceIndicator) => {
        if (resourceIndicator !== api) throw new errors.InvalidTarget();
        return { scope: apiScope, audience: api, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
    devInteractions: { enabled: false },
  },
  claims: { openid: ['sub'], profile: ['name', 'preferred_username'] },
  async findAccount(_ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, name: 'Ada Lovelace', preferred_username: 'ada' };
      },
    };
  },
});
// Bad requests are the clients' fault; the bench counts them, the log need not.
provider.on('server_error', (_ctx, error) => process.stderr.write(`oidc-provider server_error: ${error.stack}\n`));

/** Mints authorization codes as its authorization endpoint would after approval: a grant, then the code. */
async function mintCodes(count) {
  const codes = [];
  const authTime = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count; i += 1) {
    const verifier = randomBytes(32).toString('base64url');
    const grant = new provider.Grant({ accountId: `user-${i}`, clientId });
    grant.addOIDCScope('openid profile');
    const grantId = await grant.save();
    const code = await new provider.AuthorizationCode({
      accountId: `user-${i}`,
      client: await provider.Client.find(clientId),
      grantId,
      redirectUri,
      scope: 'openid profile',
      authTime,
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
      codeChallengeMethod: 'S256',
    }).save();
    codes.push({ code, verifier });
  }
  return codes;
}

/** Mints refresh tokens as a code exchange with offline_access would: a grant, then the token. */
async function mintRefreshTokens(count) {
  const tokens = [];
  const authTime = Math.floor(Date.now() / 1000);
  const client = await provider.Client.find(clientId);
  for (let i = 0; i < count; i += 1) {
    const grant = new provider.Grant({ accountId: `user-${i}`, clientId });
    grant.addOIDCScope('openid profile offline_access');
    const grantId = await grant.save();
    tokens.push(
      await new provider.RefreshToken({
        accountId: `user-${i}`,
        client,
        grantId,
        gty: 'authorization_code',
        scope: 'openid profile offline_access',
        authTime,
      }).save(),
    );
  }
  return tokens;
}

const MINT = { 'mint-codes': mintCodes, 'mint-refresh-tokens': mintRefreshTokens };

process.on('message', (message) => {
  const mint = MINT[message?.type];
  if (!mint) return;
  mint(message.count).then(
    (minted) => process.send({ id: message.id, minted }),
    (error) => process.send({ id: message.id, error: String(error?.stack ?? error) }),
  );
});

const server = provider.listen(port, '127.0.0.1', () => process.send?.({ type: 'ready' }));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
