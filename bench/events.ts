/**
 * The events flood: an operator's program disabling and enabling people over and
 * over through the admin API (POST /admin/v1/users/NAME/disable, then /enable), each change an
 * audit event that the outbox trigger queues for every Shared Signals push stream asking for
 * RISC account-disabled and account-enabled, and that the server's dispatcher then signs (a SET
 * each) and pushes to a receiver on loopback. The
 * scenario compares token responses alone, during the flood with its streams disabled (the
 * changes alone), and during the flood with the streams enabled (the changes and their
 * delivery): the outbox's work is the difference between the last two.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { GRANT_CLIENT_CREDENTIALS } from '../src/core/protocol.ts';
import { DELIVERY_PUSH, SSF_EVENTS } from '../src/core/ssf.ts';
import { newUserRecord, type Store } from '../src/store/types.ts';
import { basic } from './targets.ts';

/** A receiver that takes every SET at once (202), counting them. */
export interface EventReceiver {
  readonly url: string;
  received: number;
  close(): Promise<void>;
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const receiver = {
    url: '',
    received: 0,
    close: async () => {},
  };
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      receiver.received += 1;
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/caep`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return receiver;
}

/** What the flood seeded: the admin client's Basic credentials, and a switch for its streams. */
export interface EventFloodSeed {
  readonly adminAuthorization: string;
  /** Enables or disables every stream (disabled: the trigger queues nothing for them). */
  setStreams(enabled: boolean): Promise<void>;
}

/** The people the flood disables and enables: one for each change in flight, so that no two race. */
const floodPerson = (index: number) => `events-${index}`;

/**
 * Registers an admin client (admin:users), `people` people, and a receiver with `streams`
 * push streams to `receiverUrl`, disabled.
 */
export async function seedEventFlood(store: Store, receiverUrl: string, streams: number, people: number): Promise<EventFloodSeed> {
  const now = Date.now();
  for (let i = 0; i < people; i += 1) {
    await store.users.create(
      newUserRecord({
        id: randomUUID(),
        username: floodPerson(i),
        passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        createdAt: now,
      }),
    );
  }
  const events = [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED];
  const client = (id: string, secret: string, scope: string) =>
    store.clients.create({
      id,
      name: id,
      secretHash: hashSecret(secret),
      redirectUris: [],
      scopes: [scope],
      grantTypes: [GRANT_CLIENT_CREDENTIALS],
      webOrigins: [],
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: now,
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    });
  const adminId = `bench-admin-${randomUUID()}`;
  const adminSecret = randomToken(32);
  await client(adminId, adminSecret, 'admin:users');
  const receiverId = `bench-receiver-${randomUUID()}`;
  await client(receiverId, randomToken(32), 'ssf:manage');
  const ids: string[] = [];
  for (let i = 0; i < streams; i += 1) {
    const id = randomUUID();
    ids.push(id);
    await store.ssf.createStream({
      id,
      clientId: receiverId,
      audience: [receiverId],
      eventsRequested: events,
      eventsDelivered: events,
      deliveryMethod: DELIVERY_PUSH,
      endpointUrl: receiverUrl,
      authorizationHeader: null,
      format: 'iss_sub',
      defaultSubjects: 'ALL',
      description: null,
      status: 'disabled',
      reason: null,
      createdAt: now,
      updatedAt: now,
    });
  }
  return {
    adminAuthorization: basic(adminId, adminSecret),
    async setStreams(enabled) {
      for (const id of ids) {
        const stream = await store.ssf.getStream(id);
        if (stream) await store.ssf.saveStream({ ...stream, status: enabled ? 'enabled' : 'disabled', updatedAt: Date.now() });
      }
    },
  };
}

export interface EventFlood {
  /** Stops changing and waits for the changes in flight; resolves with how many were answered 200, and how many not. */
  stop(): Promise<{ changed: number; other: number }>;
}

/** Keeps `inFlight` changes in flight through the admin API until stopped: each of its own person, disabled, then enabled, again and again. */
export async function startEventFlood(origin: string, adminAuthorization: string, inFlight: number): Promise<EventFlood> {
  const tokenResponse = await fetch(`${origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: adminAuthorization },
    body: `grant_type=client_credentials&scope=admin:users&resource=${encodeURIComponent(`${origin}/admin`)}`,
  });
  const { access_token: token } = (await tokenResponse.json()) as { access_token?: string };
  if (!token) throw new Error(`no admin token from ${origin} (${tokenResponse.status})`);
  const counts = { changed: 0, other: 0 };
  let running = true;
  const loop = async (index: number) => {
    let disabled = false;
    while (running) {
      try {
        const response = await fetch(`${origin}/admin/v1/users/${floodPerson(index)}/${disabled ? 'enable' : 'disable'}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        });
        await response.arrayBuffer();
        if (response.status === 200) {
          counts.changed += 1;
          disabled = !disabled;
        } else counts.other += 1;
      } catch {
        counts.other += 1;
      }
    }
  };
  const loops = Array.from({ length: inFlight }, (_, index) => loop(index));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}
