import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Frame, type Locator, type Page, type Request } from 'playwright-core';
import { checkAccessibility } from './accessibility.ts';
import { REDIRECT_URI } from './server.ts';
import { WAIT_MS } from './wait.ts';

/**
 * Debian's Chromium headless shell (`apt-get install chromium-headless-shell`), the build
 * Playwright itself runs headless: the same Blink as the browser, at about half the CPU time
 * a page (opening a browser context costs a third), and the browser tests were half of the
 * suite's CPU time. Where only Debian's whole browser is installed, that one;
 * `TESSERA_CHROMIUM` names another.
 */
const INSTALLED = ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'];

export const CHROMIUM_PATH = process.env['TESSERA_CHROMIUM'] ?? INSTALLED.find((path) => existsSync(path)) ?? INSTALLED[0]!;

/**
 * Why browser tests cannot run here, or undefined when they can. In CI a missing browser is
 * a failure, not a skip: `.ci/run` installs Debian's chromium.
 */
export function chromiumUnavailable(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  if (process.env['CI']) throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}; .ci/run should have installed it`);
  return `browser tests skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium-headless-shell)`;
}

/**
 * Chromium features off in the test browser: Playwright's own (it passes them in a
 * `--disable-features` switch of its own, and Chromium reads only the last such switch, so a
 * list here replaces Playwright's and must carry it; test/chromium.test.ts fails when
 * Playwright's list names one this does not), and RenderDocument. With RenderDocument,
 * Chromium makes a new frame, and a new compositor frame for it, at every navigation; without
 * it a navigation within a site keeps its frame. A page load of a Tessera page then cost 21–22
 * ms of Chromium's CPU instead of 33–37 (browser process 8–9 ms instead of 12–13, renderer
 * 9–10 instead of 16–18, GPU process 1.7 instead of 3.1–3.5), and the browser tests load
 * thousands of pages. No page of Tessera can tell the difference.
 */
const DISABLED_FEATURES: readonly string[] = [
  // Playwright's own.
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
  // The tests' own.
  'RenderDocument',
];

/** The one Chromium of this test process, started by the first file that asks for one. */
let shared: Promise<Browser> | undefined;

function sharedChromium(): Promise<Browser> {
  shared ??= chromium
    .launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
        `--disable-features=${DISABLED_FEATURES.join(',')}`,
      ],
    })
    .then((browser) => {
      // A browser that crashed or was closed is started afresh by the next file.
      browser.on('disconnected', () => (shared = undefined));
      return browser;
    });
  return shared;
}

/** How long a page action or navigation of a test's browser waits before it fails. */
const ACTION_TIMEOUT_MS = 10_000;

/**
 * Headless Debian Chromium with the flags this sandboxed, offline machine needs, as a file's
 * own browser: its contexts and pages are its own, and `close()` closes those and nothing
 * else. The test files of a shard run in one process (test/run.ts), and each starting a
 * browser of its own cost a second or more of CPU a file; they share one Chromium, which
 * goes with the process. Every page it opens is checked by axe-core; `close()` fails on a
 * violation (./accessibility.ts).
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await sharedChromium();
  const contexts = new Set<BrowserContext>();
  const own = Object.create(browser) as Browser;
  own.newContext = async (...args) => {
    const context = await browser.newContext(...args);
    // A test whose rule is broken waits for an element that never comes: it fails after this,
    // not after Playwright's 30 s (three such tests held test/browser.test.ts for 62 s). Page
    // actions here take well under a second; ten leaves room for a machine busy with the suite.
    context.setDefaultTimeout(ACTION_TIMEOUT_MS);
    contexts.add(context);
    context.on('close', () => contexts.delete(context));
    return context;
  };
  // As Browser.newPage: a page in a context of its own, here one this file closes.
  own.newPage = async (...args) => (await own.newContext(...args)).newPage();
  own.contexts = () => [...contexts];
  own.close = async () => {
    await Promise.allSettled([...contexts].map((context) => context.close()));
  };
  return checkAccessibility(own);
}

/**
 * A browser profile with a platform authenticator (Chromium's virtual one, over the DevTools
 * protocol) that keeps passkeys and verifies its user, and a page in it: `cdp` and
 * `authenticatorId` reach its credentials.
 */
export async function withVirtualAuthenticator(
  browser: Browser,
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { context, page, cdp, authenticatorId };
}

/** A phone's screen, touch and all (an iPhone 14's viewport): options for a context or page. */
export const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true } as const;

/** Each file's reused pages (cleanPage), by the options of their contexts. */
const reusable = new WeakMap<Browser, Map<string, Page>>();

/**
 * A page of `browser` as a new context made with `options` would give it: no cookies, no
 * routes, nothing loaded. It is one page, reused by each test that asks with the same options:
 * a new context's page cost about 0.1 s of CPU (a renderer process, and Playwright setting the
 * page up), a cleared one about 15 ms. A test that needs two browsers at once, or one with an
 * authenticator or init scripts of its own, makes a context as before; one that closes this
 * page's context only makes the next ask open another. Web storage is not cleared: Tessera's
 * pages keep none.
 */
export async function cleanPage(browser: Browser, options: Parameters<Browser['newContext']>[0] = {}): Promise<Page> {
  let pages = reusable.get(browser);
  if (pages === undefined) reusable.set(browser, (pages = new Map()));
  const key = JSON.stringify(options);
  const page = pages.get(key);
  if (page === undefined || page.isClosed()) {
    const made = await (await browser.newContext(options)).newPage();
    pages.set(key, made);
    return made;
  }
  // Away from the last test's document first: a redirect or refresh it left under way must
  // not land in the next test, nor set a cookie after they are cleared.
  await page.goto('about:blank');
  await page.context().clearCookies();
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  return page;
}

/** A clean page of `browser` (cleanPage, with `options`), whose redirects to the app are caught (`catchRedirect`) instead of loaded. */
export async function pageCatchingRedirect(
  browser: Browser,
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<{ page: Page; callback: Promise<URL> }> {
  const page = await cleanPage(browser, options);
  return { page, callback: catchRedirect(page) };
}

/** pageCatchingRedirect at a phone's size (PHONE). */
export const phonePageCatchingRedirect = (browser: Browser) => pageCatchingRedirect(browser, PHONE);

/**
 * Where the server sent the browser back to the app: the URL of the first navigation `page`
 * makes to `redirectUri` (the app's, where nothing listens), once the browser has landed
 * after it (on its own error page), so the test's next navigation is not cut short by it.
 * Read from the request, not caught by a route: Playwright's routes never see the target of a
 * redirect, and the server answers every authorization with one.
 */
export function catchRedirect(page: Page, redirectUri = REDIRECT_URI): Promise<URL> {
  return new Promise<URL>((resolve) => {
    let sent: URL | undefined;
    const request = (candidate: Request) => {
      if (sent === undefined && candidate.isNavigationRequest() && candidate.url().startsWith(redirectUri)) sent = new URL(candidate.url());
    };
    const landed = (frame: Frame) => {
      if (sent === undefined || frame !== page.mainFrame()) return;
      page.off('request', request);
      page.off('framenavigated', landed);
      resolve(sent);
    };
    page.on('request', request);
    page.on('framenavigated', landed);
  });
}

/**
 * Signs `user` in on the sign-in form `page` shows: their username and password, then the
 * Sign in button (named exactly so, beside "Sign in with a passkey" where passkeys are offered).
 */
export async function signInWithPassword(page: Page, user: { readonly username: string; readonly password: string }): Promise<void> {
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/**
 * A new page in `browser` sent to `url` (an authorization request), where `user` signs in with
 * their password; `callback` is where the server sends it back to the app (`catchRedirect`).
 */
export async function signInAt(
  browser: Browser,
  url: URL | string,
  user: { readonly username: string; readonly password: string },
  redirectUri = REDIRECT_URI,
): Promise<{ page: Page; callback: Promise<URL> }> {
  const page = await browser.newPage();
  const callback = catchRedirect(page, redirectUri);
  await page.goto(String(url));
  await signInWithPassword(page, user);
  return { page, callback };
}

/** How long the sign-in page's autofill request is given to sign in by itself before its passkey button is pressed. */
const AUTOFILL_MS = 1500;

/**
 * Opens the account page of `issuer` in `page`, whose authenticator holds a passkey there, and
 * signs in with it: the sign-in page's autofill request is answered at once, or its passkey
 * button is pressed; waits for the account page, signed in. The button is pressed only when
 * the account page has not come by itself: a click aimed at the sign-in page while the
 * autofill request took it to the account page waited for a button that was gone, for the
 * whole of its 3 s timeout, at every sign-in of the suite's passkey files.
 */
export async function signInToAccountWithPasskey(page: Page, issuer: string): Promise<void> {
  await page.goto(`${issuer}/account`);
  const emailHeading = page.locator('#email-heading');
  const signedInByAutofill = await emailHeading.waitFor({ timeout: AUTOFILL_MS }).then(
    () => true,
    () => false,
  );
  if (!signedInByAutofill)
    await page
      .locator('#passkey-button')
      .click({ timeout: 3000 })
      .catch(() => {});
  await reach(page, emailHeading, 'the account page, signed in with the passkey');
}

/** How long an alert may stand at one address before the page counts as settled on it. */
const SETTLED_MS = 1500;

/**
 * Waits until `page` shows what the test expects: `expected` in view, or (a function) an
 * address it accepts. Fails at once, saying what the page says, when the page settles on an
 * error instead (an alert in view at one address for a second and a half, without what was
 * expected), and after `ms` at the latest: a browser test whose flow broke ends in seconds,
 * not after Playwright's 30 s for each wait it makes (a broken upstream sign-in held
 * test/upstream-oidc.test.ts for 227 s).
 */
export async function reach(page: Page, expected: Locator | ((url: URL) => boolean), what: string, ms = WAIT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  let alertAt: { url: string; since: number } | null = null;
  for (;;) {
    const shown =
      typeof expected === 'function'
        ? expected(new URL(page.url()))
        : await expected
            .first()
            .isVisible()
            .catch(() => false);
    if (shown) return;
    const alert = page.getByRole('alert').filter({ visible: true }).first();
    if (await alert.isVisible().catch(() => false)) {
      const url = page.url();
      if (alertAt === null || alertAt.url !== url) alertAt = { url, since: Date.now() };
      else if (Date.now() - alertAt.since >= SETTLED_MS) {
        const heading = await page
          .getByRole('heading', { level: 1 })
          .first()
          .innerText({ timeout: 1000 })
          .catch(() => '');
        const says = await alert.innerText({ timeout: 1000 }).catch(() => '');
        throw new Error(`waited for ${what}, but the page settled on ${url}, "${heading}": ${says}`);
      }
    } else {
      alertAt = null;
    }
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}; the page is at ${page.url()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
