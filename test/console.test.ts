/**
 * The operator console over plain HTTP, for what a browser test would only see by accident:
 * every change refuses a post without the form's CSRF token (the browser test's posts all
 * carry it), names an app chose itself are written as text, and an organization or a SAML
 * service provider edited from a page opened before someone else changed it is refused with
 * their change shown, not saved over it. The operator is signed in by the session flow
 * (helpers/console.ts); test/console-browser.test.ts signs in as a person does.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createClient } from '../src/flows/manage/clients.ts';
import { addOrganization, updateOrganization } from '../src/flows/manage/organizations.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { addSamlSp, updateSamlSp } from '../src/flows/manage/saml-service-providers.ts';
import { pemCertificate, selfSignedCertificate } from '../src/tokens/certificate.ts';
import { operatorBrowser } from './helpers/console.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';

describe('the operator console over HTTP', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it("refuses every change posted without the form's CSRF token, or with another, and changes nothing", async () => {
    const { browser, csrf } = await operatorBrowser(server, 'admin');
    const target = await server.addUser({ username: 'target' });
    const { client } = await createClient(manageDeps(server), { client_name: 'Target app', redirect_uris: [REDIRECT_URI] });
    await addResource(manageDeps(server), { identifier: 'https://target.example', name: 'Target API', scopes: [{ name: 'target:read', description: 'Read' }] });
    const app = `/console/apps/${encodeURIComponent(client.id)}`;
    const api = `/console/apis/${encodeURIComponent('https://target.example')}`;
    const user = `/console/users/${target.username}`;
    const posts: [string, Record<string, string>][] = [
      ['/console/apps', { client_name: 'New app', redirect_uris: REDIRECT_URI }],
      [app, { client_name: 'Renamed' }],
      [`${app}/verify`, {}],
      [`${app}/rotate`, { grace: '0' }],
      [`${app}/remove`, {}],
      ['/console/apis', { identifier: 'https://new.example', name: 'New API' }],
      [api, { name: 'Renamed API' }],
      [`${api}/remove`, {}],
      ['/console/keys/rotate', {}],
      [`${user}/disable`, {}],
      [`${user}/enable`, {}],
      [`${user}/end-sessions`, {}],
      [`${user}/reset-second-factor`, {}],
      [`${user}/unlock`, {}],
      [`${user}/role`, { role: 'admin' }],
      [`${user}/reset-link`, {}],
    ];
    const events = async () => (await server.store.events.list({ limit: 1000 })).length;
    const before = await events();
    for (const [path, form] of posts) {
      for (const [how, token] of [
        ['without a token', null],
        ['with another token', 'x'.repeat(43)],
      ] as const) {
        const page = await browser.request(path, { form: token === null ? form : { ...form, csrf_token: token } });
        assert.equal(page.status, 403, `${path} ${how}: ${page.status} ${page.location ?? ''}`);
        assert.match(page.html, /This form has expired/, `${path} ${how}`);
      }
    }
    assert.equal(await events(), before, 'nothing was done');
    assert.equal((await server.store.users.get(target.id))?.disabled, false);
    assert.equal((await server.store.clients.get(client.id))?.name, 'Target app');

    // The same post with the token does what it says: the refusals above were the token's.
    const done = await browser.request(`${user}/disable`, { form: { csrf_token: csrf } });
    assert.equal(done.status, 303, done.html.slice(0, 500));
    assert.equal((await server.store.users.get(target.id))?.disabled, true);
  });

  /** The text of a page's stale-edit warning, tags and entities taken out. */
  const warning = (html: string) =>
    (/<div class="alert warning" role="alert">([\s\S]*?)<\/div>/.exec(html)?.[1] ?? '')
      .replace(/<[^>]+>/g, ' ')
      .replace(/&rarr;|&#8594;/g, '→')
      .replace(/\s+/g, ' ')
      .replace(/ :/g, ':')
      .trim();

  it("refuses an organization's edit from a page opened before someone else required a passkey, showing their change, and saves it over theirs when posted again", async () => {
    const { browser } = await operatorBrowser(server, 'admin');
    const org = await addOrganization(manageDeps(server), { name: 'Stale Org' });
    const path = `/console/orgs/${org.id}`;
    const opened = await browser.request(path);
    assert.equal(opened.status, 200, opened.html.slice(0, 300));
    assert.equal(browser.form(opened, path).fields['require_passkey'], undefined, 'opened with the box unchecked');
    // Someone else (another operator, the command, the admin API) requires a passkey meanwhile.
    await updateOrganization(manageDeps(server), org.id, { require_passkey: true });

    const refused = await browser.submit(opened, path, { name: 'Stale Org Renamed' });
    assert.equal(refused.status, 409, refused.html.slice(0, 500));
    assert.match(warning(refused.html), /^Not saved: someone else changed this organization after you opened it\. Their change: .*require_passkey: No → Yes/);
    const stored = await server.store.organizations.get(org.id);
    assert.deepEqual([stored?.name, stored?.requirePasskey], ['Stale Org', true], 'nothing of the stale edit was saved, and their change stands');
    const again = browser.form(refused, path).fields;
    assert.deepEqual([again['name'], again['require_passkey']], ['Stale Org Renamed', 'on'], "the form as it is now, with the operator's change over it");

    const saved = await browser.submit(refused, path, {});
    assert.equal(saved.status, 303, saved.html.slice(0, 500));
    const after = await server.store.organizations.get(org.id);
    assert.deepEqual([after?.name, after?.requirePasskey], ['Stale Org Renamed', true]);
  });

  it("refuses a SAML service provider's edit from a page opened before someone else replaced its certificate and pruned its ACS URLs, showing their change", async () => {
    const { browser } = await operatorBrowser(server, 'admin');
    const certificate = (name: string) => pemCertificate(selfSignedCertificate(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, name, name));
    const [first, second] = [certificate('sp-first'), certificate('sp-second')];
    const sp = await addSamlSp(manageDeps(server), {
      entity_id: 'https://stale-sp.example/saml',
      name: 'Stale SP',
      acs_urls: ['https://stale-sp.example/acs', 'https://old.stale-sp.example/acs'],
      certificate: first,
      encryption_certificate: first,
    });
    const path = `/console/saml/${sp.id}`;
    const opened = await browser.request(path);
    assert.equal(opened.status, 200, opened.html.slice(0, 300));
    // Someone else replaces its certificate, asks for signed requests and drops the old ACS URL meanwhile.
    await updateSamlSp(manageDeps(server), sp.id, { certificate: second, want_signed_requests: true, acs_urls: ['https://stale-sp.example/acs'] });
    const theirs = await server.store.samlServiceProviders.get(sp.id);

    const rename = { name: 'Stale SP Renamed' };
    const body = new URLSearchParams({ ...browser.form(opened, path).fields, ...rename }).toString();
    assert.ok(body.length < 12 * 1024, `the form with both certificates and its original fits the console's 16 KiB with room: ${body.length}`);
    const refused = await browser.submit(opened, path, rename);
    assert.equal(refused.status, 409, refused.html.slice(0, 500));
    const shown = warning(refused.html);
    assert.match(shown, /^Not saved: someone else changed this service provider after you opened it\. Their change: /);
    assert.match(shown, /acs_urls: https:\/\/stale-sp\.example\/acs, https:\/\/old\.stale-sp\.example\/acs → https:\/\/stale-sp\.example\/acs/);
    assert.match(shown, /want_signed_requests: No → Yes/);
    assert.match(shown, /certificate: -----BEGIN CERTIFICATE-----/);
    assert.deepEqual(
      await server.store.samlServiceProviders.get(sp.id),
      theirs,
      'nothing of the stale edit was saved: their certificate, ACS URLs and signed requests stand',
    );
    const again = browser.form(refused, path).fields;
    assert.deepEqual([again['name'], again['want_signed_requests']], ['Stale SP Renamed', 'on'], "the form as it is now, with the operator's change over it");

    const saved = await browser.submit(refused, path, {});
    assert.equal(saved.status, 303, /role="alert"[^>]*>([\s\S]{0,800})/.exec(saved.html)?.[1]);
    const after = await server.store.samlServiceProviders.get(sp.id);
    assert.deepEqual(after, { ...theirs, name: 'Stale SP Renamed', updatedAt: after?.updatedAt }, 'the rename, over their change');
  });

  it("writes an app's name as text in the list of apps, whoever chose it", async () => {
    const { browser } = await operatorBrowser(server, 'support');
    const name = `<img src=x onerror="alert(1)"> & "Friends"`;
    await createClient(manageDeps(server), { client_name: name, redirect_uris: [REDIRECT_URI] });
    const page = await browser.request('/console/apps');
    assert.equal(page.status, 200, page.html.slice(0, 500));
    assert.ok(!page.html.includes('<img src=x'), 'no element of the name');
    assert.ok(page.html.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &quot;Friends&quot;'), 'the name, escaped');
  });

  it("writes a person's name as text in the list of users, whatever they signed up with", async () => {
    const { browser } = await operatorBrowser(server, 'viewer');
    await server.addUser({ username: 'mallory', name: `<img src=x onerror="alert(1)"> & "Co"`, email: 'mallory@example.com' });
    const page = await browser.request('/console/users?q=mallory');
    assert.equal(page.status, 200, page.html.slice(0, 500));
    assert.ok(!page.html.includes('<img src=x'), 'no element of the name');
    assert.ok(page.html.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &quot;Co&quot; · mallory@example.com'), 'the name, escaped');
  });

  it("shows the OpenID scopes' descriptions in the operator's language, as the consent page does", async () => {
    const { browser } = await operatorBrowser(server, 'viewer');
    for (const [locale, profile, english] of [
      ['de', 'Ihren Namen, Spitznamen', false],
      ['ar', 'الاطلاع على اسمك', false],
      ['en', 'See your name', true],
    ] as const) {
      const page = await browser.request(`/console/apis?ui_locales=${locale}`);
      assert.equal(page.status, 200, page.html.slice(0, 500));
      const openid = page.html.slice(page.html.indexOf('id="openid-heading"'));
      assert.ok(openid.includes(profile), `${locale}: ${openid.slice(0, 600)}`);
      assert.equal(openid.includes('See your name'), english, locale);
    }
  });

  it("edits a person's names in other languages as claim#tag lines: changed, added, and a line taken out removed", async () => {
    const { browser } = await operatorBrowser(server, 'admin');
    const target = await server.addUser({ username: 'yamada' });
    await server.store.users.update(
      target.id,
      { localizedNames: { 'ja-Kana-JP': { name: 'ヤマダ タロウ', given_name: 'タロウ' }, 'ja-Hani-JP': { name: '山田太郎' } } },
      Date.now(),
    );
    const path = `/console/users/${target.username}/profile`;
    const page = await browser.request(path);
    assert.equal(page.status, 200, page.html.slice(0, 300));
    const form = browser.form(page, path);
    assert.equal(form.fields['localized_names'], 'name#ja-Hani-JP=山田太郎\nname#ja-Kana-JP=ヤマダ タロウ\ngiven_name#ja-Kana-JP=タロウ');
    // The Kanji name and the katakana given name taken out, the katakana name changed, a German one added.
    const saved = await browser.submit(page, path, { localized_names: 'name#ja-Kana-JP=ヤマダ ハナコ\nname#de = Hanako Yamada' });
    assert.equal(saved.status, 303, saved.html.slice(0, 500));
    assert.deepEqual((await server.store.users.get(target.id))?.localizedNames, { 'ja-Kana-JP': { name: 'ヤマダ ハナコ' }, de: { name: 'Hanako Yamada' } });
    const wrong = await browser.submit(await browser.request(path), path, { localized_names: 'Hanako Yamada' });
    assert.equal(wrong.status, 400, wrong.html.slice(0, 300));
    assert.match(wrong.html, /CLAIM#TAG=VALUE/);
  });

  it("refuses a person's e-mail address that another account has, in any case, with the reason beside the form", async () => {
    const { browser } = await operatorBrowser(server, 'admin');
    await server.addUser({ username: 'holder', email: 'held@example.com' });
    const target = await server.addUser({ username: 'mover', email: 'mover@example.com' });
    const path = `/console/users/${target.username}/profile`;
    const refused = await browser.submit(await browser.request(path), path, { email: 'HELD@example.com' });
    assert.equal(refused.status, 409, refused.html.slice(0, 300));
    assert.match(refused.html, /the e-mail address HELD@example\.com is another account&#39;s|the e-mail address HELD@example\.com is another account's/);
    assert.equal(browser.form(refused, path).fields['email'], 'HELD@example.com', 'what the operator typed is kept in the form');
    assert.match(
      refused.html,
      /<input type="text" id="email" name="email" value="HELD@example.com"[^>]* aria-invalid="true" aria-describedby="form-error/,
      'the field is marked, naming the error',
    );
    assert.match(refused.html, /<p class="alert error" role="alert" id="form-error">/);
    assert.equal((await server.store.users.get(target.id))?.email, 'mover@example.com', 'nothing written');
  });
});
