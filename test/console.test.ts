/**
 * The operator console over plain HTTP, for what a browser test would only see by accident:
 * every change refuses a post without the form's CSRF token (the browser test's posts all
 * carry it), and names an app chose itself are written as text. The operator is signed in
 * by the session flow (helpers/console.ts); test/console-browser.test.ts signs in as a person does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from '../src/flows/manage/clients.ts';
import { addResource } from '../src/flows/manage/resources.ts';
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
