/**
 * axe-core over every Tessera page a browser test opens: each page's document is checked
 * once it has loaded, and each distinct page state once per `npm test` run. A state is the
 * page's structure at its width: its elements, how they nest and their attribute names, not
 * its values, so a sign-in page with an error is one state, without it another, and at a
 * phone's width a third; a list of three users is the state of a list of thirty (a run of
 * siblings alike counts once), and one user's page the state of another's. A violation fails
 * the test file that checked the state when its browser closes, naming the page, the rule and
 * the elements. A test file run on its own checks every state it reaches.
 */
import { createHash } from 'node:crypto';
import { openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** WCAG 2.2 A and AA, the level the pages promise. */
const RUN_OPTIONS = { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] };

const checked = new Set<string>();

/**
 * The run's record of checked states, shared by its test files (./global-setup.ts): one empty
 * file a state, created exclusively, so whichever file meets a state first checks it. Without
 * a run (a file run on its own), the process's own set above is the whole record.
 */
const RUN_DIRECTORY = process.env['AXE_CHECKED_STATES_DIRECTORY'];

function claimFile(key: string): string {
  return join(RUN_DIRECTORY ?? '', `axe-${createHash('sha256').update(key).digest('hex')}`);
}

/** Whether this process is the first of the run to check `key`. */
function claim(key: string): boolean {
  if (checked.has(key)) return false;
  checked.add(key);
  if (RUN_DIRECTORY === undefined) return true;
  try {
    closeSync(openSync(claimFile(key), 'wx'));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Gives a claimed state back, unchecked, for the next process or page that meets it. */
function release(key: string): void {
  checked.delete(key);
  if (RUN_DIRECTORY !== undefined) rmSync(claimFile(key), { force: true });
}

interface Violation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly string[] }[];
}

/** In the page: its structure, as a key saying which states were already checked. */
const STRUCTURE = `(() => {
  // Only Tessera's own pages (they load its stylesheet), not the apps the tests play.
  if (!document.querySelector('link[rel=stylesheet][href="/assets/tessera.css"]')) return null;
  const shape = (element) => {
    const children = [];
    for (const child of element.children) {
      const inner = shape(child);
      // A run of siblings alike (the rows of a list) is one.
      if (children[children.length - 1] !== inner) children.push(inner);
    }
    return element.tagName + '[' + Array.from(element.attributes, (attribute) => attribute.name).join(',') + '](' + children.join(';') + ')';
  };
  // A page at a phone's width is another state than at a desktop's (both are checked).
  return window.innerWidth + '|' + shape(document.body);
})()`;

/**
 * axe-core's violations on the page as it stands now, one line each (page, rule, elements): for
 * a test that names the page states it checks (test/accessibility.test.ts), including pages set
 * with `setContent`, which the watch below leaves alone.
 */
export function axeViolations(page: Page, name = page.url()): Promise<string[]> {
  // axe-core runs once at a time in a page: a test's check waits for the load watch's.
  const run = (running.get(page) ?? Promise.resolve()).then(() => runAxe(page, name));
  running.set(
    page,
    run.catch(() => {}),
  );
  return run;
}

const running = new WeakMap<Page, Promise<unknown>>();

/**
 * Each page's DevTools session, through which axe-core's source goes into a document: sent
 * as it is, where `page.evaluate` wraps and re-encodes its 500 KB on the way, a third of the
 * cost of loading it (and loading it cost more than running it on most pages).
 */
const sessions = new WeakMap<Page, Promise<CDPSession>>();

async function runAxe(page: Page, name: string): Promise<string[]> {
  if (!(await page.evaluate("'axe' in window"))) {
    let session = sessions.get(page);
    if (session === undefined) sessions.set(page, (session = page.context().newCDPSession(page)));
    const { exceptionDetails } = await (await session).send('Runtime.evaluate', { expression: AXE_SOURCE });
    if (exceptionDetails) throw new Error(`loading axe-core failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  }
  // Only a page of a site: a navigation since the check began may have left the browser's own
  // error page in its place (a redirect to an app where nothing listens), which is not ours.
  const violations = (await page.evaluate(
    `location.protocol.startsWith('http') ? axe.run(document, ${JSON.stringify(RUN_OPTIONS)}).then((result) => result.violations) : []`,
  )) as Violation[];
  return violations.map(
    (violation) => `${name}: ${violation.id} (${violation.impact}): ${violation.help}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
  );
}

/** Checks the page as it stands; a page that navigated away meanwhile is left to its next load. */
async function check(page: Page, found: string[]): Promise<void> {
  try {
    const key = (await page.evaluate(STRUCTURE)) as string | null;
    if (key === null) return;
    // Claimed before running, so two loads of one state never run axe at once in a page.
    if (!claim(key)) return;
    let violations: string[];
    try {
      violations = await axeViolations(page, `${page.url()} (${await page.title()})`);
    } catch (error) {
      // Left before axe ran: checked when it is next seen.
      release(key);
      throw error;
    }
    found.push(...violations);
  } catch (error) {
    // The test moved on (a navigation, a closed page, a DevTools session its page took with
    // it): that state is gone. A navigation between loading axe and running it leaves a
    // document without axe, and one while axe runs leaves it reading a document that is gone
    // (its `document.documentElement` null: seen once on a loaded machine).
    if (page.isClosed()) return;
    if (
      !/Execution context was destroyed|Target page, context or browser has been closed|No target with given id|no object with guid|Session closed|navigat|axe is not defined|reading 'documentElement'/i.test(
        String(error),
      )
    )
      throw error;
  }
}

/** The pages watched: `browser.newPage` opens its page through `browser.newContext`, so both wrappers meet each page. */
const watched = new WeakSet<Page>();

function watch(page: Page, found: string[], pending: Set<Promise<void>>): void {
  if (watched.has(page)) return;
  watched.add(page);
  // One check at a time per page: a check begun for one document may run its evaluations in
  // the next (page.evaluate goes to the page's current document), where the next load's own
  // check would otherwise start axe a second time ("Axe is already running"). In turn, the
  // later check finds the state checked already.
  let previous: Promise<void> = Promise.resolve();
  page.on('load', () => {
    if (!page.url().startsWith('http')) return;
    // An unexpected failure is reported when the browser closes, like a violation: left as a
    // rejection, it would surface as an unhandled rejection in whichever test runs then.
    const run = previous
      .then(() => check(page, found))
      .catch((error: unknown) => void found.push(`${page.url()}: the accessibility check failed: ${String(error)}`))
      .finally(() => pending.delete(run));
    previous = run;
    pending.add(run);
  });
}

/**
 * Makes every page of `browser` checked by axe-core, and its `close()` fail with the
 * violations found.
 */
export function checkAccessibility(browser: Browser): Browser {
  const found: string[] = [];
  const pending = new Set<Promise<void>>();
  const watchContext = (context: BrowserContext) => {
    context.on('page', (page) => watch(page, found, pending));
    for (const page of context.pages()) watch(page, found, pending);
    return context;
  };
  const newContext = browser.newContext.bind(browser);
  const newPage = browser.newPage.bind(browser);
  const close = browser.close.bind(browser);
  browser.newContext = async (...args) => watchContext(await newContext(...args));
  browser.newPage = async (...args) => {
    const page = await newPage(...args);
    watchContext(page.context());
    return page;
  };
  browser.close = async (...args) => {
    await Promise.allSettled([...pending]);
    await close(...args);
    if (found.length > 0) throw new Error(`axe-core found accessibility violations:\n${[...new Set(found)].join('\n')}`);
  };
  return browser;
}
