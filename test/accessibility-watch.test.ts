/**
 * The accessibility watch itself (helpers/accessibility.ts): every browser test relies on it to
 * fail on a page that breaks WCAG, so it must see what a person would. It checks a copy of each
 * page state in a checker page; these pages break rules that only the copied style sheet,
 * attributes or width can show, and the watch must name each when the browser closes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { axeViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, launchChromium, PHONE } from './helpers/chromium.ts';
import { closeServer, listenOnFreePort } from './helpers/server.ts';
import type { Server } from 'node:http';

/** Grey on white at 2:1 (WCAG 1.4.3 asks 4.5:1), from the style sheet only. */
const STYLESHEET =
  'body { font: 16px sans-serif; } .faint { color: #aaa; background: #fff; } .tiny { width: 10px; height: 10px; padding: 0; } @media (max-width: 600px) { .narrow { color: #aaa; } }';

/**
 * A page as Tessera serves them (its style sheet linked from /assets/tessera.css). Each page's
 * body differs in its elements, so that no page's state is another's (a state is checked once
 * a run), and carries an attribute named for this process, so that no other file's or
 * process's check of the run has claimed its state first.
 */
const RUN_MARK = `data-watch-${randomBytes(6).toString('hex')}`;

function page(body: string, head = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Test page</title><link rel="stylesheet" href="/assets/tessera.css">${head}</head><body ${RUN_MARK}><main><h1>Test page</h1>${body}</main></body></html>`;
}

const IMAGE = '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">';

/** The pages, served from `origin`. */
const pages = (origin: string): Record<string, string> => ({
  '/contrast': page('<p class="faint">Hard to read</p>'),
  '/alt': page(IMAGE),
  // Its refresh, to an address of its own as Tessera's redirect pages have, must take the page
  // under test away, not the checker page its copy is checked in.
  '/refresh': page(`<p>Moving on</p>${IMAGE}`, `<meta http-equiv="refresh" content="1;url=${origin}/fine">`),
  // Buttons 10 px square with nothing around them (WCAG 2.5.8 asks 24 px), in a row; text
  // faint at a phone's width only.
  '/targets': page('<p class="narrow">Small print</p><p><button class="tiny" aria-label="one"></button><button class="tiny" aria-label="two"></button></p>'),
  '/fine': page('<p>Easy to read</p>'),
});

describe('the accessibility watch', { skip: chromiumUnavailable() }, () => {
  let server: Server;
  let origin: string;

  before(async () => {
    ({ server } = await listenOnFreePort());
    server.on('request', (request, response) => {
      if (request.url === '/assets/tessera.css') {
        response.setHeader('content-type', 'text/css');
        response.end(STYLESHEET);
        return;
      }
      const body = pages(origin)[request.url ?? ''];
      response.statusCode = body === undefined ? 404 : 200;
      response.setHeader('content-type', 'text/html; charset=utf-8');
      response.end(body ?? 'not found');
    });
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  });
  after(() => closeServer(server));

  it("fails the browser's close on what only the style sheet, the attributes or the width show, naming the page and the rule", async () => {
    const browser = await launchChromium();
    // A page each: a page left before its check is checked when its state is next met.
    for (const path of ['/contrast', '/alt', '/fine']) await (await browser.newPage()).goto(`${origin}${path}`);
    const phone = await browser.newPage(PHONE);
    await phone.goto(`${origin}/targets`);
    await assert.rejects(browser.close(), (error: Error) => {
      assert.match(error.message, /^axe-core found accessibility violations:/);
      const lines = error.message.split('\n').slice(1);
      assert.ok(
        lines.some((line) => line.startsWith(`${origin}/contrast (Test page): color-contrast (serious)`)),
        error.message,
      );
      assert.ok(
        lines.some((line) => line.startsWith(`${origin}/alt (Test page): image-alt (critical)`)),
        error.message,
      );
      assert.ok(
        lines.some((line) => line.startsWith(`${origin}/targets (Test page): target-size (serious)`)),
        error.message,
      );
      // Faint only at a phone's width: checked at the width it was met at.
      assert.ok(
        lines.some((line) => line.startsWith(`${origin}/targets (Test page): color-contrast (serious)`) && line.endsWith(': .narrow')),
        error.message,
      );
      assert.ok(!lines.some((line) => line.startsWith(`${origin}/fine `)), error.message);
      return true;
    });
  });

  it('checks a page that refreshes to another, and the one it refreshed to after it', async () => {
    const browser = await launchChromium();
    const tab = await browser.newPage();
    await tab.goto(`${origin}/refresh`, { waitUntil: 'load' });
    assert.deepEqual(
      (await axeViolations(tab, 'refreshing')).map((line) => line.split(': ')[1]),
      ['image-alt (critical)'],
    );
    await tab.waitForURL(`${origin}/fine`);
    await tab.waitForLoadState('load');
    assert.deepEqual(await axeViolations(tab, 'refreshed'), []);
    // The watch found the refreshing page's state too.
    await assert.rejects(browser.close(), /\/refresh \(Test page\): image-alt/);
  });
});
