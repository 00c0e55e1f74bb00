/**
 * RP-Initiated Logout 1.0 without HTTP: what an end-session request leads to (sign out now,
 * ask first, or an error page, never a redirect to an address not registered), given the
 * browser's session and ID tokens issued by the token issuer. test/logout.test.ts drives the
 * same through the endpoint, its confirmation page and openid-client.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { RawParams } from '../../core/protocol.ts';
import type { ClientRecord, SessionRecord, UserRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { checkEndSession, type EndSessionStep, postLogoutRedirect } from './end-session.ts';

const BYE = 'https://notes.example/bye';

describe('RP-Initiated Logout 1.0 (checkEndSession)', () => {
  let world: FlowWorld;
  let notes: ClientRecord;
  let other: ClientRecord;
  let ada: UserRecord;
  let session: SessionRecord;

  before(async () => {
    world = await flowWorld();
    const code = { redirect_uris: ['https://notes.example/cb'], scope: 'openid' };
    ({ client: notes } = await world.addClient({ client_name: 'Notes', post_logout_redirect_uris: [BYE, 'https://notes.example/slash/'], ...code }));
    ({ client: other } = await world.addClient({ client_name: 'Other', post_logout_redirect_uris: ['https://other.example/bye'], ...code }));
    ada = await world.addUser({ username: 'ada' });
    const now = world.clock.now();
    session = {
      idHash: 'h',
      sid: 'sid-of-this-browser',
      userId: ada.id,
      authTime: now,
      createdAt: now,
      expiresAt: now + 86_400_000,
      ip: null,
      userAgent: null,
    };
  });
  after(() => world.close());

  /** An ID token `client` was given in the session `sid`. */
  async function idToken(client = notes, sid: string | null = session.sid, user = ada): Promise<string> {
    const now = world.clock.now();
    const grantId = randomUUID();
    await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope: ['openid'] }, now));
    return (await world.tokens.issue({ client, user, scope: ['openid'], grantId, authTime: now, sid })).id_token!;
  }

  /** The step's kind, and where the browser would go after (or the error code). */
  async function step(params: RawParams, from: SessionRecord | null = session, confirmed = false): Promise<string> {
    const result: EndSessionStep = await checkEndSession(world.deps, params, from, confirmed);
    if (result.kind === 'error') return `error ${result.error.code}`;
    return `${result.kind} ${postLogoutRedirect(result.after) ?? 'here'}`;
  }

  it('signs out at once for an app that proves it acts for this session, and asks the person otherwise (§2)', async () => {
    const hint = await idToken();
    const cases: [string, RawParams, SessionRecord | null, boolean, string][] = [
      ['nobody signed in', {}, null, false, 'end here'],
      ['no hint', {}, session, false, 'confirm here'],
      ['a hint for this session', { id_token_hint: hint }, session, false, 'end here'],
      ['a hint for another session of the person', { id_token_hint: await idToken(notes, 'another-sid') }, session, false, 'confirm here'],
      [
        'a hint of a session of someone else',
        { id_token_hint: await idToken(notes, null, await world.addUser({ username: 'eve' })) },
        session,
        false,
        'confirm here',
      ],
      ['a forged hint', { id_token_hint: `${hint.slice(0, -4)}AAAA` }, session, false, 'confirm here'],
      ['the person said so on our page', {}, session, true, 'end here'],
    ];
    for (const [what, params, from, confirmed, expected] of cases) assert.equal(await step(params, from, confirmed), expected, what);
  });

  it('takes an expired ID token as a hint still (§2: it "need not" be live)', async () => {
    const hint = await idToken();
    world.clock.advance(2 * 86_400_000);
    assert.equal(await step({ id_token_hint: hint }), 'end here');
  });

  it('sends the browser back only to a post_logout_redirect_uri the client registered, with state (§3)', async () => {
    const hint = await idToken();
    const cases: [string, RawParams, string][] = [
      ['registered, named by client_id', { client_id: notes.id, post_logout_redirect_uri: BYE, state: 's 1' }, `confirm ${BYE}?state=s+1`],
      ['registered, named by the hint', { id_token_hint: hint, post_logout_redirect_uri: BYE, state: 'xyz' }, `end ${BYE}?state=xyz`],
      ['without state', { client_id: notes.id, post_logout_redirect_uri: BYE }, `confirm ${BYE}`],
      ['state alone, with no URI to carry it', { client_id: notes.id, state: 'xyz' }, 'confirm here'],
      ['not registered', { client_id: notes.id, post_logout_redirect_uri: 'https://evil.example/' }, 'error invalid_request'],
      ["another client's", { client_id: notes.id, post_logout_redirect_uri: 'https://other.example/bye' }, 'error invalid_request'],
      ['registered, with a trailing slash added', { client_id: notes.id, post_logout_redirect_uri: `${BYE}/` }, 'error invalid_request'],
      ['no client named at all', { post_logout_redirect_uri: BYE }, 'error invalid_request'],
      ['an unknown client_id', { client_id: 'nobody', post_logout_redirect_uri: BYE }, 'error invalid_request'],
      ['an unknown client_id alone', { client_id: 'nobody' }, 'error invalid_request'],
      ['a hint issued to another client than client_id', { id_token_hint: hint, client_id: other.id }, 'error invalid_request'],
      ['a forged hint naming the client', { id_token_hint: `${hint.slice(0, -4)}AAAA`, post_logout_redirect_uri: BYE }, 'confirm here'],
      ['a parameter sent twice', { client_id: [notes.id, notes.id] }, 'error invalid_request'],
      ['a state too long to echo', { client_id: notes.id, post_logout_redirect_uri: BYE, state: 's'.repeat(4097) }, 'error invalid_request'],
    ];
    for (const [what, params, expected] of cases) assert.equal(await step(params), expected, what);
    const alone = await checkEndSession(world.deps, { client_id: notes.id, state: 'xyz' }, session, false);
    assert.equal(alone.kind !== 'error' && alone.after.state, null, 'state is kept only to go back with');
  });

  it('says which slash differs when a URI is registered with or without a trailing one', async () => {
    const result = await checkEndSession(world.deps, { client_id: notes.id, post_logout_redirect_uri: 'https://notes.example/slash' }, session, false);
    assert.ok(result.kind === 'error');
    assert.match(result.error.description, /registered with a trailing slash/);
  });
});
