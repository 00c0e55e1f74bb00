/**
 * axe-core over every Tessera page a browser test opens: each page's document is checked
 * once it has loaded, and each distinct page state once per `npm test` run. A state is the
 * page's structure at its width: its elements, how they nest and their attribute names, not
 * its values, so a sign-in page with an error is one state, without it another, and at a
 * phone's width a third; a list of three users is the state of a list of thirty (a run of
 * siblings alike counts once), and one user's page the state of another's. A violation fails
 * the test file that checked the state when its browser closes, naming the page, the rule and
 * the elements. A test file run on its own checks every state it reaches.
 *
 * A state is checked as a copy: its document as it stood (its attributes, its style sheets'
 * rules, not its scripts) is set into one checker page of the browser, at the state's width,
 * and axe-core runs there. Loading axe-core's 500 KB into each new document and running it
 * cold cost about 170 ms of a renderer a state, a quarter of the browser tests' CPU; in the
 * checker it is loaded once and runs warm, and the page under test is free at once.
 */
import { createHash } from 'node:crypto';
import { openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** WCAG 2.2 A and AA, the level the pages promise. */
const RUN_OPTIONS = { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'] };

/**
 * The rules whose outcome a page's words decide, not its structure: what a translation can
 * break (a label, a button's or a link's name left empty or not matching what it shows, a
 * title, an image's text alternative, the language named). For `textViolations`.
 */
const TEXT_RULES = [
  'label',
  'button-name',
  'input-button-name',
  'link-name',
  'select-name',
  'aria-input-field-name',
  'label-content-name-mismatch',
  'image-alt',
  'document-title',
  'empty-heading',
  'html-has-lang',
  'html-lang-valid',
  'valid-lang',
];

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

/** A document as it stood, for the checker page: see SNAPSHOT. */
interface Snapshot {
  /** Its structure (STRUCTURE's key), or null for a page that is not Tessera's. */
  readonly key: string | null;
  readonly url: string;
  readonly title: string;
  readonly width: number;
  readonly height: number;
  /** The `<html>` element's attributes (lang, dir). */
  readonly attributes: readonly (readonly [string, string])[];
  /** What is inside `<html>`, with its style sheets' rules inlined and nothing that would run or load. */
  readonly inner: string;
}

/** In the page: its structure, as a key saying which states were already checked; null for a page not Tessera's. */
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
 * In the page: the document as it stands, for the checker. Its style sheets go as their rules
 * (the page may read them, the checker, of another origin, could not), one a sheet linked from
 * elsewhere as a link to it; scripts, other links and \`http-equiv\` (a refresh would navigate
 * the checker) are left out, as are the values typed into fields, which no rule reads.
 */
const SNAPSHOT = `(() => {
  const copy = document.documentElement.cloneNode(true);
  for (const element of copy.querySelectorAll('script, link, style, meta[http-equiv], base')) element.remove();
  const sheets = Array.from(document.styleSheets, (sheet) => {
    const media = sheet.media.mediaText;
    try {
      const rules = Array.from(sheet.cssRules, (rule) => rule.cssText).join('\\n');
      const style = document.createElement('style');
      style.textContent = media ? '@media ' + media + ' {\\n' + rules + '\\n}' : rules;
      return style;
    } catch {
      const link = document.createElement('link');
      link.rel = 'stylesheet';
      link.href = sheet.href;
      if (media) link.media = media;
      return link;
    }
  });
  (copy.querySelector('head') ?? copy).prepend(...sheets);
  return {
    key: ${STRUCTURE},
    url: location.href,
    title: document.title,
    width: window.innerWidth,
    height: window.innerHeight,
    attributes: Array.from(document.documentElement.attributes, (attribute) => [attribute.name, attribute.value]),
    inner: copy.innerHTML,
  };
})()`;

/** In the checker: the snapshot's document in place of the one before, once its linked style sheets have loaded. */
const REPLACE = `(snapshot) => {
  const root = document.documentElement;
  for (const attribute of Array.from(root.attributes)) root.removeAttribute(attribute.name);
  for (const [name, value] of snapshot.attributes) root.setAttribute(name, value);
  root.innerHTML = snapshot.inner;
  return Promise.all(
    Array.from(document.querySelectorAll('link[rel=stylesheet]'), (link) =>
      link.sheet ? null : new Promise((resolve) => { link.onload = link.onerror = resolve; }),
    ),
  );
}`;

/**
 * The checker page of a browser: a page of a context of its own (no test's), in standards mode,
 * with axe-core loaded once. Checks run in it one at a time, in the order asked.
 */
interface Checker {
  readonly page: Page;
  queue: Promise<unknown>;
}

const checkers = new WeakMap<Browser, Promise<Checker>>();

/** axe-core's violations of `options`' rules in `page`'s document, where it is loaded. */
async function runAxe(page: Page, options: object): Promise<Violation[]> {
  return (await page.evaluate(`axe.run(document, ${JSON.stringify(options)}).then((result) => result.violations)`)) as Violation[];
}

/** Loads axe-core into `page`'s document. */
async function loadAxe(page: Page): Promise<void> {
  const session = await page.context().newCDPSession(page);
  try {
    // Sent as it is: page.evaluate would wrap and re-encode its 500 KB.
    const { exceptionDetails } = await session.send('Runtime.evaluate', { expression: AXE_SOURCE });
    if (exceptionDetails) throw new Error(`loading axe-core failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  } finally {
    await session.detach();
  }
}

function checkerOf(browser: Browser): Promise<Checker> {
  let checker = checkers.get(browser);
  if (checker === undefined) {
    checker = (async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.setContent('<!doctype html><html><head></head><body></body></html>');
      await loadAxe(page);
      return { page, queue: Promise.resolve() };
    })();
    checkers.set(browser, checker);
    // A checker that failed to start, or whose page went (a crash), is made again when next needed.
    checker.then(
      ({ page }) => page.once('close', () => checkers.delete(browser)),
      () => checkers.delete(browser),
    );
  }
  return checker;
}

/** axe-core's violations in `snapshot`, checked in `browser`'s checker page. */
async function checkSnapshot(browser: Browser, snapshot: Snapshot, options: object = RUN_OPTIONS): Promise<Violation[]> {
  const checker = await checkerOf(browser);
  const run = checker.queue.then(async () => {
    const size = checker.page.viewportSize();
    if (size?.width !== snapshot.width || size.height !== snapshot.height)
      await checker.page.setViewportSize({ width: snapshot.width, height: snapshot.height });
    await checker.page.evaluate(`(${REPLACE})(${JSON.stringify(snapshot)})`);
    return runAxe(checker.page, options);
  });
  checker.queue = run.catch(() => {});
  return run;
}

/** Violations as a failure lists them, one line each: page, rule, elements. */
function lines(violations: readonly Violation[], name: string): string[] {
  return violations.map(
    (violation) => `${name}: ${violation.id} (${violation.impact}): ${violation.help}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
  );
}

/** A state's check in this process: its violations and the page they were found on, or null when its copy could not be taken. */
interface Check {
  readonly result: Promise<{ readonly violations: readonly Violation[]; readonly name: string } | null>;
  /** Whether a watch has put its violations into a browser's failure. */
  reported: boolean;
}

/**
 * The states this process has checked, by key. A test that names a state the watch has checked
 * (axeViolations) gets that check's violations, and the watch meeting a state a test named
 * reports that test's: each state goes through axe-core once. The sign-up, passkey sign-up and
 * accessibility files name states the watch meets too, and ran axe-core on 50 of them twice.
 */
const checks = new Map<string, Check>();

/** `result`, with its failure left to whoever awaits it: a check no test waits for must not fail as an unhandled rejection. */
function handled<T>(result: Promise<T>): Promise<T> {
  result.catch(() => {});
  return result;
}

/**
 * axe-core's violations on the page as it stands now, one line each (page, rule, elements): for
 * a test that names the page states it checks (test/accessibility.test.ts), including pages set
 * with \`setContent\`, which the watch below leaves alone. None for a page that is not of a site
 * (a browser's own error page, after a redirect to an app where nothing listens).
 */
export async function axeViolations(page: Page, name = page.url()): Promise<string[]> {
  const snapshot = (await page.evaluate(SNAPSHOT)) as Snapshot;
  // A page set with `setContent` (about:blank) is checked as it stands, a browser's error page not.
  if (!snapshot.url.startsWith('http') && snapshot.url !== 'about:blank') return [];
  const earlier = snapshot.key === null ? undefined : await checks.get(snapshot.key)?.result;
  if (earlier) return lines(earlier.violations, name);
  const violations = checkSnapshot(page.context().browser()!, snapshot);
  if (snapshot.key !== null) {
    // Claimed for the run too, so that no other file's watch checks it again.
    claim(snapshot.key);
    checks.set(snapshot.key, {
      result: handled(violations.then((found) => ({ violations: found, name: `${snapshot.url} (${snapshot.title})` }))),
      reported: false,
    });
  }
  return lines(await violations, name);
}

/**
 * axe-core's rules that a page's words decide (TEXT_RULES), on the page as it stands now, one
 * line each: for a page whose structure was checked with every rule in another language
 * (test/languages-browser.test.ts checks each page so in its first language, then these in
 * every other). Every call is checked: the words differ where the structure does not.
 */
export async function textViolations(page: Page, name: string): Promise<string[]> {
  // Run in the page itself, with axe-core loaded into it once: a page that only has its
  // content set again (`setContent`) keeps its window, and with it axe-core, so each check
  // costs only the rules' run, not a copy set into the checker.
  if (!(await page.evaluate('typeof axe !== "undefined"'))) await loadAxe(page);
  return lines(await runAxe(page, { runOnly: { type: 'rule', values: TEXT_RULES }, resultTypes: ['violations'] }), name);
}

/**
 * Takes a copy of the page as it stands, if its state is new to the run, and has it checked;
 * `checking` gets the check. A page that navigated away meanwhile is left to its next load.
 */
async function check(page: Page, checking: (run: Promise<void>) => void, found: string[]): Promise<void> {
  let key: string | null = null;
  /** Settles this check's entry in `checks`, until the check is under way. */
  let settle: ((result: Check['result']) => void) | undefined;
  try {
    key = (await page.evaluate(STRUCTURE)) as string | null;
    if (key === null) return;
    const earlier = checks.get(key);
    if (earlier !== undefined) {
      // Checked for a test that named it: its violations fail this browser's close too.
      if (!earlier.reported) {
        earlier.reported = true;
        checking(earlier.result.then((result) => void (result && found.push(...lines(result.violations, result.name)))));
      }
      return;
    }
    if (!claim(key)) return;
    checks.set(key, { result: handled(new Promise((resolve) => (settle = resolve))), reported: true });
    const snapshot = (await page.evaluate(SNAPSHOT)) as Snapshot;
    // Another document since the key was taken: its own load checks it.
    if (snapshot.key !== key) throw new Error('navigated away before the copy was taken');
    const name = `${snapshot.url} (${snapshot.title})`;
    const violations = checkSnapshot(page.context().browser()!, snapshot);
    settle!(violations.then((list) => ({ violations: list, name })));
    settle = undefined;
    checking(violations.then((list) => void found.push(...lines(list, name))));
  } catch (error) {
    // The test moved on (a navigation, a closed page) before the copy was taken: that state is
    // gone, and is checked when it is next seen.
    if (key !== null && settle !== undefined) {
      checks.delete(key);
      release(key);
      settle(Promise.resolve(null));
    }
    if (page.isClosed()) return;
    if (
      !/Execution context was destroyed|Target page, context or browser has been closed|No target with given id|no object with guid|Session closed|navigat/i.test(
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
  // An unexpected failure is reported when the browser closes, like a violation: left as a
  // rejection, it would surface as an unhandled rejection in whichever test runs then.
  const track = (run: Promise<void>) => {
    const tracked = run
      .catch((error: unknown) => void found.push(`${page.url()}: the accessibility check failed: ${String(error)}`))
      .finally(() => pending.delete(tracked));
    pending.add(tracked);
  };
  // One copy at a time per page: a copy begun for one document may take its evaluations from
  // the next (page.evaluate goes to the page's current document), whose own load then finds its
  // state claimed. The checks themselves queue in the checker page.
  let previous: Promise<void> = Promise.resolve();
  page.on('load', () => {
    if (!page.url().startsWith('http')) return;
    const run = previous.then(() => check(page, track, found));
    previous = run.catch(() => {});
    track(run);
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
    // A copy taken while waiting adds its check: wait for that too.
    while (pending.size > 0) await Promise.allSettled([...pending]);
    await close(...args);
    if (found.length > 0) throw new Error(`axe-core found accessibility violations:\n${[...new Set(found)].join('\n')}`);
  };
  return browser;
}
