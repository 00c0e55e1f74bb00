/**
 * A flow's world without HTTP: an in-memory SQLite store (the real statements, no file), a
 * clock the test moves, signing keys, the token issuer, the audit trail and the password
 * queue, as `buildApp` wires them. Unit tests beside the flows (src/flows/**\/*.test.ts) call
 * a flow with `deps` (or `manage`, the management operations' dependencies with every admin
 * scope, as the command has) and check what it returns and what it left in the store.
 */
import { loadConfig, type Config } from '../../src/config/index.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { Events } from '../../src/core/events.ts';
import { hashPassword } from '../../src/core/password.ts';
import { PasswordQueue } from '../../src/core/password-queue.ts';
import { OWNER } from '../../src/flows/manage/authority.ts';
import { createClient, type ClientMetadata } from '../../src/flows/manage/clients.ts';
import type { ManageDeps } from '../../src/flows/manage/deps.ts';
import type { FlowDeps } from '../../src/flows/types.ts';
import { openStore } from '../../src/store/open.ts';
import { newUserRecord, type ClientRecord, type IdentityProviderRecord, type Store, type UserRecord } from '../../src/store/types.ts';
import { TokenIssuer } from '../../src/tokens/issue.ts';
import { KeyManager } from '../../src/tokens/keys.ts';
import { OAuthError } from '../../src/core/errors.ts';
import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import type { AuditEvent } from '../../src/core/events.ts';
import { ManageError } from '../../src/flows/manage/errors.ts';
import { mailOutbox, type MailMessage, type MailOutbox } from '../../src/flows/mail/outbox.ts';
import { KeyEncryption } from '../../src/tokens/key-encryption.ts';
import { secretBox, type SecretBox } from '../../src/tokens/secret-box.ts';
import { randomBytes } from 'node:crypto';
import { hashSecret, randomToken } from '../../src/core/crypto.ts';
import type { CookiePort } from '../../src/flows/session/cookies.ts';
import { ScimError } from '../../src/flows/scim/errors.ts';
import { seedRsaKey } from './keys.ts';
import { ifMatchVersion } from '../../src/flows/scim/users.ts';

export const FLOW_ISSUER = 'https://auth.example.com';

export interface FlowWorld {
  readonly store: Store;
  readonly clock: ManualClock;
  readonly config: Config;
  readonly keys: KeyManager;
  /** Seals what the store keeps secret (a stream's push header, a message in the mail outbox), under a key of this world's. */
  readonly secrets: SecretBox;
  /** The mail outbox, as a server with a mail server set has it (`deps` has none: add `{ mail }` where a flow mails). */
  readonly mail: MailOutbox;
  readonly tokens: TokenIssuer;
  readonly passwords: PasswordQueue;
  /** What a protocol flow is given. */
  readonly deps: FlowDeps & { readonly passwords: PasswordQueue };
  /** What a management operation is given, as the command gives it: every admin scope. */
  readonly manage: ManageDeps;
  /** A client made by the same operation as `tessera client add`; its secret, for a confidential one. */
  addClient(metadata: ClientMetadata): Promise<{ client: ClientRecord; secret: string | null }>;
  addUser(fields?: Partial<Parameters<typeof newUserRecord>[0]>): Promise<UserRecord>;
  close(): Promise<void>;
}

let users = 0;

/** A fresh world; `env` adds settings (TESSERA_*) to the test defaults (cheapest argon2id, the issuer above). */
export async function flowWorld(env: Readonly<Record<string, string>> = {}): Promise<FlowWorld> {
  const config = loadConfig({ TESSERA_ISSUER: FLOW_ISSUER, TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1', TESSERA_SIGN_IN_DELAY_MS: '0', ...env });
  const clock = new ManualClock();
  const store = await openStore(':memory:');
  const keys = new KeyManager(store.keys, clock, { leadTimeSeconds: config.keyLeadTimeSeconds, maxTokenLifetimeSeconds: 3600 });
  await seedRsaKey(store.keys, clock.now());
  await keys.ensureKeys();
  const tokens = new TokenIssuer(keys, clock, config.issuer, config.lifetimes, store, config.accessTokenAlg);
  const passwords = new PasswordQueue({ threads: 1, maxWaiting: 100, perAddress: 100 });
  const events = new Events(clock, store.events, []);
  const deps = { store, clock, config, tokens, events, passwords, sleep: async () => {} };
  const secrets = secretBox(new KeyEncryption([randomBytes(32)]));
  const manage: ManageDeps = { ...deps, caller: OWNER, tellApps: async () => 0 };
  return {
    store,
    clock,
    config,
    keys,
    secrets,
    mail: mailOutbox(secrets, () => clock.now()),
    tokens,
    passwords,
    deps,
    manage,
    addClient: async (metadata) => {
      const made = await createClient(manage, metadata);
      return { client: made.client, secret: made.secret ?? null };
    },
    addUser: async (fields = {}) => {
      users += 1;
      const username = fields.username ?? `user${users}`;
      const user = newUserRecord({
        id: `sub-${username}`,
        username,
        passwordHash: await hashPassword('correct horse battery', config.passwordHash),
        createdAt: clock.now(),
        ...fields,
      });
      await store.users.create(user);
      return user;
    },
    close: async () => {
      await passwords.close();
      await store.close();
    },
  };
}

/**
 * A live refresh token of the grant `grantId` for `userId` at `clientId`, made now with
 * `scope`, as a code exchange leaves it (no session, no DPoP key), living `lifetimeMs`: the
 * token, as the client would hold it.
 */
export async function liveRefreshToken(
  world: FlowWorld,
  token: { readonly grantId: string; readonly userId: string; readonly clientId: string; readonly scope: string[]; readonly lifetimeMs: number },
): Promise<string> {
  const now = world.clock.now();
  const value = randomToken(32);
  await world.store.refreshTokens.create({
    hash: hashSecret(value),
    grantId: token.grantId,
    clientId: token.clientId,
    userId: token.userId,
    scope: token.scope,
    authTime: now,
    sid: null,
    createdAt: now,
    expiresAt: now + token.lifetimeMs,
    rotatedAt: null,
    dpopJkt: null,
    idTokenClaims: [],
  });
  return value;
}

/** The OAuth error code `run` fails with (a ManageError as `invalid:FIELD`), or 'ok'. */
export async function outcome(run: () => unknown): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    if (error instanceof OAuthError) return error.code;
    if (error instanceof ManageError) return `${error.kind}${error.field ? `:${error.field}` : ''}`;
    throw error;
  }
}

/** An OpenID provider as the store keeps it, `settings` over the usual ones: for flows that read providers without adding them. */
export const oidcProviderRecord = (id: string, settings: Record<string, unknown> = {}): IdentityProviderRecord => ({
  id,
  kind: 'oidc',
  name: id,
  position: 0,
  secret: null,
  createdAt: 0,
  updatedAt: 0,
  settings: { issuer: `https://${id}.example`, clientId: 'tessera', scopes: ['openid', 'email'], ...settings },
});

/**
 * Links `subject` at an OpenID provider `providerId` (added as `oidcProviderRecord` makes it,
 * unless the world has it) to `userId`, as a sign-in through that provider would have.
 */
export async function linkIdentity(world: FlowWorld, userId: string, subject: string, providerId = 'elsewhere'): Promise<void> {
  const now = world.clock.now();
  if ((await world.store.identityProviders.get(providerId)) === null)
    await world.store.identityProviders.create({ ...oidcProviderRecord(providerId), createdAt: now, updatedAt: now });
  await world.store.linkedIdentities.create({ providerId, subject, userId, label: null, groups: [], createdAt: now, lastUsedAt: null });
}

/** The messages the outbox holds for `events`, opened as the mail dispatcher opens them: nothing sends them in a flow's world. */
export async function queuedMail(world: FlowWorld, events: readonly AuditEvent[]): Promise<MailMessage[]> {
  const deliveries = (await Promise.all(events.map((event) => world.store.mail.forEvent(event.id)))).flat();
  return deliveries.map((delivery) => {
    if (delivery.message === null) throw new Error(`message ${delivery.id} was erased`);
    return world.mail.open(delivery.id, delivery.message);
  });
}

/** Two device clients of `world` (RFC 8628), asking for openid and profile: the living-room TV and the kitchen radio. */
export async function deviceClients(world: FlowWorld): Promise<[ClientRecord, ClientRecord]> {
  const device = (name: string) => world.addClient({ client_name: name, grant_types: [GRANT_DEVICE_CODE], scope: 'openid profile' });
  return [(await device('Living-room TV')).client, (await device('Kitchen radio')).client];
}

/** Two Shared Signals receivers of `world` (SSF 1.0 §8.1.1): clients of the client_credentials grant holding `ssf:manage`. */
export async function ssfReceivers(world: FlowWorld): Promise<[ClientRecord, ClientRecord]> {
  const receiver = (name: string) => world.addClient({ client_name: name, grant_types: ['client_credentials'], scope: 'ssf:manage' });
  return [(await receiver('Receiver')).client, (await receiver('Other receiver')).client];
}

/** A browser's cookie jar for a flow: what the flow set (`jar`), for how long (`lifetimes`), and each write and clearing in order (`writes`). */
export class CookieJar implements CookiePort {
  readonly jar = new Map<string, string>();
  readonly lifetimes = new Map<string, number>();
  readonly writes: { name: string; value: string | null; maxAgeSeconds: number | null }[] = [];
  read(name: string): string | undefined {
    return this.jar.get(name);
  }
  set(name: string, value: string, maxAgeSeconds: number): void {
    this.jar.set(name, value);
    this.lifetimes.set(name, maxAgeSeconds);
    this.writes.push({ name, value, maxAgeSeconds });
  }
  clear(name: string): void {
    this.jar.delete(name);
    this.writes.push({ name, value: null, maxAgeSeconds: null });
  }
}

/** The status and scimType a SCIM operation is refused with (RFC 7644 §3.12); fails the test when it is not refused. */
export async function scimRefusal(run: Promise<unknown>): Promise<[number, string | null]> {
  try {
    await run;
  } catch (error) {
    if (error instanceof ScimError) return [error.status, error.scimType];
    throw error;
  }
  throw new Error('expected a refusal');
}

/** The version a SCIM resource's meta.version gives, read as an If-Match header is. */
export const scimVersionOf = (resource: Record<string, unknown>): number | null =>
  ifMatchVersion(String((resource['meta'] as Record<string, unknown>)['version']));
