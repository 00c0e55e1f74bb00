/**
 * Passkeys (WebAuthn Level 3) without HTTP or a browser: registration (§7.1) and sign-in
 * (§7.2) answered by a software authenticator that can be told to lie, over the flow world,
 * whose issuer https://auth.example.com is the RP ID and origin. What each refusal is
 * called, and the audit event a refused sign-in leaves. test/passkeys.test.ts drives the same
 * through the pages; test/passkeys-browser.test.ts with Chromium's virtual authenticator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UserRecord } from '../../store/types.ts';
import { SoftwarePasskey } from '../../../test/helpers/authenticator.ts';
import { FLOW_ISSUER, flowWorld, linkIdentity, type FlowWorld } from '../../../test/helpers/flows.ts';
import { authenticationOptions, finishAuthentication, mayRemoveAPasskey, removePasskey } from './authentication.ts';
import { NO_PASSWORD } from '../users.ts';
import { finishRegistration, PASSKEY_NAME_MAX, registrationOptions } from './registration.ts';

const ORIGIN = new URL(FLOW_ISSUER).origin;
const BROWSER = 'browser-of-the-person';
const ELSEWHERE = 'another-browser';

describe('passkeys (WebAuthn Level 3)', () => {
  let world: FlowWorld;
  let ada: UserRecord;
  let grace: UserRecord;

  before(async () => {
    world = await flowWorld();
    ada = await world.addUser({ username: 'ada' });
    grace = await world.addUser({ username: 'grace' });
  });
  after(() => world.close());

  /** The options registration gives `user` in `browser`, as the page's script receives them. */
  const creation = async (user: UserRecord, browser = BROWSER) => JSON.parse(JSON.stringify(await registrationOptions(world.deps, user, browser)));
  const request = async (browser = BROWSER) => JSON.parse(JSON.stringify(await authenticationOptions(world.deps, browser)));

  /** A passkey of `user`'s, registered as the account page registers one. */
  async function registered(user: UserRecord): Promise<SoftwarePasskey> {
    const passkey = new SoftwarePasskey();
    const added = await finishRegistration(world.deps, user, 'Laptop', JSON.stringify(passkey.register(await creation(user), ORIGIN)), BROWSER);
    assert.equal(added.kind, 'added');
    return passkey;
  }

  it('registers a passkey answered for this RP, from the browser that asked, for the person it was asked for, once (§7.1)', async () => {
    const passkey = new SoftwarePasskey();
    const options = await creation(ada);
    assert.equal(options.rp.id, 'auth.example.com');
    assert.equal(Buffer.from(options.user.id, 'base64url').toString('utf8'), ada.id, '§5.4.3: the user handle is the sub, not the username');
    const response = JSON.stringify(passkey.register(options, ORIGIN));
    const added = await finishRegistration(world.deps, ada, `  Work laptop ${'x'.repeat(PASSKEY_NAME_MAX)}`, response, BROWSER);
    assert.equal(added.kind, 'added');
    if (added.kind !== 'added') return;
    assert.deepEqual([added.passkey.userId, added.passkey.name.length, added.passkey.name.slice(0, 11)], [ada.id, PASSKEY_NAME_MAX, 'Work laptop']);
    assert.equal((await world.store.passkeys.get(passkey.id))?.userId, ada.id);
    // The same answer again: its challenge is spent.
    assert.equal((await finishRegistration(world.deps, ada, 'Again', response, BROWSER)).kind, 'challenge');
    // §5.4.3 excludeCredentials: the next options name it, and the same authenticator is refused.
    const next = await creation(ada);
    assert.deepEqual(
      next.excludeCredentials.map((credential: { id: string }) => credential.id),
      [passkey.id],
    );
    assert.equal((await finishRegistration(world.deps, ada, 'Twice', JSON.stringify(passkey.register(next, ORIGIN)), BROWSER)).kind, 'duplicate');
  });

  it('keeps the last passkey of a person with no password and no provider linked: removing it would lock them out', async () => {
    const pat = await world.addUser({ username: 'pat', passwordHash: NO_PASSWORD });
    const first = await registered(pat);
    assert.equal(await removePasskey(world.deps, pat, first.id), 'last');
    assert.ok(await world.store.passkeys.get(first.id), 'still there');
    const second = await registered(pat);
    assert.equal(await removePasskey(world.deps, pat, first.id), 'removed', 'with another one left');
    assert.equal(await removePasskey(world.deps, pat, second.id), 'last');
    assert.equal(await removePasskey(world.deps, pat, 'no-such-passkey'), 'missing');
    // With a password to sign in with, the only passkey goes.
    const lee = await world.addUser({ username: 'lee' });
    assert.equal(await removePasskey(world.deps, lee, (await registered(lee)).id), 'removed');
  });

  it('tells the account page whether a passkey may go, as the removal decides: a password, another passkey or a linked provider', async () => {
    const sam = await world.addUser({ username: 'sam', passwordHash: NO_PASSWORD });
    const only = await registered(sam);
    assert.equal(await mayRemoveAPasskey(world.deps, sam, 1), false);
    assert.equal(await mayRemoveAPasskey(world.deps, sam, 2), true, 'another passkey left');
    const withPassword = await world.addUser({ username: 'kim' });
    assert.equal(await mayRemoveAPasskey(world.deps, withPassword, 1), true, 'a password left');
    // A provider linked is a way in too: the removal the page offers then goes through.
    await linkIdentity(world, sam.id, 'sam');
    assert.equal(await mayRemoveAPasskey(world.deps, sam, 1), true, 'a provider linked');
    assert.equal(await removePasskey(world.deps, sam, only.id), 'removed');
  });

  it('refuses a registration answered elsewhere, for someone else, or by a lying authenticator, and keeps no passkey of it', async () => {
    const cases: [string, () => Promise<{ kind: string }>, string][] = [
      ['not JSON', async () => finishRegistration(world.deps, grace, 'x', 'not json', BROWSER), 'malformed'],
      ['no clientDataJSON', async () => finishRegistration(world.deps, grace, 'x', JSON.stringify({ id: 'abc', response: {} }), BROWSER), 'malformed'],
      [
        'from another browser than asked',
        async () => finishRegistration(world.deps, grace, 'x', JSON.stringify(new SoftwarePasskey().register(await creation(grace), ORIGIN)), ELSEWHERE),
        'challenge',
      ],
      [
        "for ada's options, finished as grace",
        async () => finishRegistration(world.deps, grace, 'x', JSON.stringify(new SoftwarePasskey().register(await creation(ada), ORIGIN)), BROWSER),
        'challenge',
      ],
      [
        'another origin (a phishing site relaying the ceremony)',
        async () =>
          finishRegistration(
            world.deps,
            grace,
            'x',
            JSON.stringify(new SoftwarePasskey().register(await creation(grace), 'https://auth.example.com.evil.example')),
            BROWSER,
          ),
        'rejected',
      ],
      [
        'another RP ID',
        async () =>
          finishRegistration(
            world.deps,
            grace,
            'x',
            JSON.stringify(new SoftwarePasskey().register(await creation(grace), ORIGIN, { rpId: 'evil.example' })),
            BROWSER,
          ),
        'rejected',
      ],
    ];
    for (const [what, run, kind] of cases) assert.equal((await run()).kind, kind, what);
    assert.deepEqual(await world.store.passkeys.listForUser(grace.id), [], 'none kept');
  });

  it('signs a person in with their passkey: hardware-bound, two factors with user verification, one without (RFC 8176 amr)', async () => {
    const passkey = await registered(ada);
    const verified = await finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN)), BROWSER);
    assert.equal(verified.kind, 'signed-in');
    if (verified.kind !== 'signed-in') return;
    assert.deepEqual([verified.user.id, verified.amr], [ada.id, ['hwk', 'mfa']]);
    assert.equal(verified.passkey.counter, passkey.counter, 'the counter recorded');
    const presence = await finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN, { userVerified: false })), BROWSER);
    assert.equal(presence.kind, 'signed-in');
    if (presence.kind === 'signed-in') assert.deepEqual(presence.amr, ['hwk', 'user'], 'presence alone is one factor');
  });

  it('refuses a sign-in as each refusal is called, and records each as passkey.refused with its reason', async () => {
    const passkey = await registered(grace);
    const answered = JSON.stringify(passkey.authenticate(await request(), ORIGIN));
    assert.equal((await finishAuthentication(world.deps, answered, BROWSER)).kind, 'signed-in');
    const stranger = new SoftwarePasskey();
    stranger.userHandle = Buffer.from(grace.id).toString('base64url');
    const cases: [string, () => Promise<{ kind: string }>, string][] = [
      ['not JSON', async () => finishAuthentication(world.deps, '{', BROWSER), 'malformed'],
      ['the same answer again', async () => finishAuthentication(world.deps, answered, BROWSER), 'challenge'],
      [
        'from another browser than asked',
        async () => finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN)), ELSEWHERE),
        'challenge',
      ],
      [
        'a credential never registered',
        async () => finishAuthentication(world.deps, JSON.stringify(stranger.authenticate(await request(), ORIGIN)), BROWSER),
        'unknown-credential',
      ],
      [
        'another origin',
        async () => finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), 'https://evil.example')), BROWSER),
        'rejected',
      ],
      [
        "another person's user handle",
        async () => {
          const answer = passkey.authenticate(await request(), ORIGIN) as { response: Record<string, unknown> };
          answer.response['userHandle'] = Buffer.from(ada.id).toString('base64url');
          return finishAuthentication(world.deps, JSON.stringify(answer), BROWSER);
        },
        'rejected',
      ],
      [
        'a counter that went back (§6.1.1: a cloned authenticator)',
        async () => finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN, { counter: 1 })), BROWSER),
        'cloned',
      ],
    ];
    for (const [what, run, kind] of cases) assert.equal((await run()).kind, kind, what);
    const reasons = (await world.store.events.list({ limit: 100 })).filter((event) => event.type === 'passkey.refused').map((event) => event.detail['reason']);
    for (const reason of ['malformed', 'challenge', 'unknown_credential', 'rejected', 'cloned']) assert.ok(reasons.includes(reason), reason);
    const cloned = (await world.store.events.list({ limit: 100 })).find((event) => event.type === 'passkey.refused' && event.detail['reason'] === 'cloned');
    assert.deepEqual([cloned?.userId, cloned?.detail['received_counter']], [grace.id, 1]);
  });

  it('refuses the passkey of a disabled person after checking it, and signs them in once they are enabled again', async () => {
    const person = await world.addUser({ username: 'margaret' });
    const passkey = await registered(person);
    await world.store.users.setDisabled(person.id, true);
    assert.equal((await finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN)), BROWSER)).kind, 'disabled');
    await world.store.users.setDisabled(person.id, false);
    assert.equal((await finishAuthentication(world.deps, JSON.stringify(passkey.authenticate(await request(), ORIGIN)), BROWSER)).kind, 'signed-in');
  });
});
