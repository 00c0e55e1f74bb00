import assert from 'node:assert/strict';

/**
 * A minimal cookie-keeping form client for tests that do not need a real browser: it reads
 * the server's pages as a person's browser would (forms, hidden fields, redirects).
 */
const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
const decodeEntities = (value: string) => value.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]!);

export interface Page {
  readonly status: number;
  readonly url: string;
  readonly html: string;
  readonly location: string | null;
  readonly headers: Headers;
}

export interface Form {
  readonly action: string;
  readonly fields: Record<string, string>;
  /** Fields whose name came before in the form (a repeated `resource`), in page order. */
  readonly repeated: [string, string][];
  /** Values of the submit buttons named `decision`, in page order. */
  readonly buttons: string[];
}

export class FormBrowser {
  readonly cookies = new Map<string, string>();
  readonly base: string;

  constructor(base: string) {
    this.base = base;
  }

  #remember(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(url: string, init: { method?: string; form?: Record<string, string> | URLSearchParams; headers?: Record<string, string> } = {}): Promise<Page> {
    const target = new URL(url, this.base).href;
    const headers: Record<string, string> = { ...init.headers };
    if (this.cookies.size > 0) headers['cookie'] = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(target, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      redirect: 'manual',
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
    this.#remember(response.headers);
    return { status: response.status, url: target, html: await response.text(), location: response.headers.get('location'), headers: response.headers };
  }

  /** Follows redirects on this server; stops at one leading elsewhere and returns it. */
  async follow(page: Page): Promise<Page> {
    let current = page;
    for (let hops = 0; current.location && hops < 10; hops++) {
      const next = new URL(current.location, current.url);
      if (next.origin !== new URL(this.base).origin) return current;
      current = await this.request(next.href);
    }
    return current;
  }

  /** The first form on the page whose action matches. */
  form(page: Page, action: string | RegExp): Form {
    for (const match of page.html.matchAll(/<form\b[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)) {
      const formAction = decodeEntities(match[1]!);
      if (typeof action === 'string' ? formAction !== action : !action.test(formAction)) continue;
      const fields: Record<string, string> = {};
      const repeated: [string, string][] = [];
      for (const input of match[2]!.matchAll(/<input\b[^>]*>/g)) {
        const name = /name="([^"]*)"/.exec(input[0])?.[1];
        // A checkbox or radio button is sent only when checked, as a browser sends it; a
        // checkbox without a value as "on" (HTML, "constructing the entry list").
        const choice = /\stype="(checkbox|radio)"/.test(input[0]);
        if (choice && !/\schecked(?=[\s=/>])/.test(input[0])) continue;
        const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? (choice ? 'on' : '');
        if (name && decodeEntities(name) in fields) repeated.push([decodeEntities(name), decodeEntities(value)]);
        else if (name) fields[decodeEntities(name)] = decodeEntities(value);
      }
      // A textarea is sent with its text, as a browser sends it.
      for (const area of match[2]!.matchAll(/<textarea\b[^>]*name="([^"]*)"[^>]*>([\s\S]*?)<\/textarea>/g))
        fields[decodeEntities(area[1]!)] = decodeEntities(area[2]!);
      // A select with its selected option, or its first when none is (HTML, "selectedness setting algorithm").
      for (const select of match[2]!.matchAll(/<select\b[^>]*name="([^"]*)"[^>]*>([\s\S]*?)<\/select>/g)) {
        const options = [...select[2]!.matchAll(/<option\b([^>]*)>/g)].map((option) => option[1]!);
        const value = /value="([^"]*)"/.exec(options.find((option) => /\sselected(?=[\s=/]|$)/.test(option)) ?? options[0] ?? '')?.[1];
        if (value !== undefined) fields[decodeEntities(select[1]!)] = decodeEntities(value);
      }
      const buttons = [...match[2]!.matchAll(/<button\b[^>]*name="decision"[^>]*value="([^"]*)"/g)].map((button) => button[1]!);
      return { action: formAction, fields, repeated, buttons };
    }
    throw new Error(`no form with action ${action} on ${page.url} (status ${page.status}):\n${page.html.slice(0, 2000)}`);
  }

  async submit(page: Page, action: string | RegExp, values: Record<string, string>): Promise<Page> {
    const form = this.form(page, action);
    const body = new URLSearchParams({ ...form.fields, ...values });
    for (const [name, value] of form.repeated) body.append(name, value);
    return this.request(new URL(form.action, page.url).href, { form: body });
  }

  /**
   * Opens an authorization URL and decides, as a person would: with `user`, the sign-in page
   * must be shown first and is filled in; without, this browser is signed in already and
   * the approval page must come at once. Asserts each page is the one expected, so a
   * regression that skipped the password or approved silently fails here (the request is
   * sent with prompt=consent unless it has a prompt of its own). Returns the
   * redirect that leaves this server (to the client's redirect_uri).
   */
  async authorize(url: string, user: { username: string; password: string } | null, decision: 'approve' | 'deny' = 'approve'): Promise<Page> {
    // An approval is remembered, and a later request it covers is answered without the
    // approval page; prompt=consent (OIDC Core §3.1.2.1) makes it come every time here.
    // What is remembered is tested in test/single-sign-on.test.ts.
    const asked = new URL(url, this.base);
    if (!asked.searchParams.has('prompt')) asked.searchParams.set('prompt', 'consent');
    let page = await this.follow(await this.request(asked.href));
    if (user) page = await this.signIn(page, user);
    assertApprovalPage(page, '/oauth/authorize/decision');
    const decided = await this.submit(page, '/oauth/authorize/decision', { decision });
    assert.equal(decided.status, 303, decided.html);
    return decided;
  }

  /**
   * Signs in with a passkey at the sign-in page `login`, as its button does: asks for the options,
   * posts `answer`'s assertion for them; returns the server's answer, not followed (303 when signed in).
   */
  async passkeySignIn(login: Page, answer: (options: Record<string, unknown>) => unknown): Promise<Page> {
    const csrf = this.form(login, '/login/passkey').fields['csrf_token']!;
    const options = JSON.parse((await this.request('/login/passkey/options', { form: { csrf_token: csrf } })).html) as Record<string, unknown>;
    return this.submit(login, '/login/passkey', { response: JSON.stringify(answer(options)) });
  }

  /** Asserts `page` is the sign-in page, signs in, and follows where the server sends the browser. */
  async signIn(page: Page, user: { username: string; password: string }): Promise<Page> {
    assertSignInPage(page);
    const signedIn = await this.submit(page, '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.status, 303, `the sign-in was refused: ${signedIn.status} ${signedIn.html.slice(0, 500)}`);
    return this.follow(signedIn);
  }
}

/** The sign-in page as a person sees it: Username, Password and a Sign in button. */
export function assertSignInPage(page: Page): void {
  assert.equal(page.status, 200, `expected the sign-in page, got ${page.status} ${page.location ?? ''} ${page.html.slice(0, 300)}`);
  assert.match(page.html, /<form method="post" action="\/login">/, 'the sign-in form');
  assert.match(page.html, /<label for="username">Username<\/label>/);
  assert.match(page.html, /<label for="password">Password<\/label>/);
  assert.match(page.html, /<button type="submit" class="primary">Sign in<\/button>/);
}

/** A page's words, as a person reads them: its tags gone, its spaces one. */
export function pageText(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');
}

/**
 * A link mailed to confirm an address on the account `owner`, followed by `browser`, which is
 * signed in as no one, then as `other` (pre-hijacked accounts, src/flows/address-link.ts):
 * each time the sign-in page for `owner` with no button that confirms, and the confirmation
 * posted to `verifyPath` anyway (the link's token, the browser's CSRF token) refused, 401 and
 * then 403. Signing in there as `other` only comes back to the same page.
 */
export async function assertAddressLinkRefused(
  browser: FormBrowser,
  link: string,
  verifyPath: string,
  owner: string,
  other: { username: string; password: string },
): Promise<void> {
  const token = new URL(link).searchParams.get('token')!;
  const confirmation = (page: Page) => ({ form: { csrf_token: browser.form(page, '/login').fields['csrf_token']!, token } });
  const shown = await browser.request(link);
  assertSignInPage(shown);
  assert.match(
    pageText(shown.html),
    new RegExp(
      `This link confirms an e-mail address for the account ${owner}\\. Sign in as ${owner} to use it\\. If that account is not yours, leave this page: nothing is confirmed\\.`,
    ),
  );
  assert.doesNotMatch(shown.html, new RegExp(`action="${verifyPath}"`));
  const posted = await browser.request(verifyPath, confirmation(shown));
  assert.equal(posted.status, 401);
  assert.match(posted.html, /<form method="post" action="\/login">/);

  await browser.signIn(await browser.request('/login?return_to=%2Faccount'), other);
  const signedInAsOther = await browser.request(link);
  assertSignInPage(signedInAsOther);
  assert.match(
    pageText(signedInAsOther.html),
    new RegExp(`You are signed in as ${other.username}, but this link confirms an e-mail address for the account ${owner}\\. Sign in as ${owner} to use it\\.`),
  );
  assert.equal((await browser.request(verifyPath, confirmation(signedInAsOther))).status, 403);
  const back = await browser.signIn(signedInAsOther, other);
  assert.equal(back.url, link);
  assertSignInPage(back);
}

/** An approval page: a form posting to `action` with a Deny and an Approve button. */
export function assertApprovalPage(page: Page, action: string): void {
  assert.equal(page.status, 200, `expected the approval page, got ${page.status} ${page.location ?? ''} ${page.html.slice(0, 300)}`);
  assert.doesNotMatch(page.html, /action="\/login"/, 'not the sign-in page');
  assert.match(page.html, />Deny<\/button>/);
  assert.match(page.html, />Approve<\/button>/);
  assert.deepEqual(new FormBrowser(page.url).form(page, action).buttons, ['deny', 'approve']);
}
