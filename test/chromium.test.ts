/**
 * The test browser itself (test/helpers/chromium.ts): the features it turns off are added to
 * Playwright's, not put in their place. Chromium reads only the last `--disable-features` switch
 * of its command line; Playwright passes one of its own first, so the helper's must name every
 * feature Playwright's does. A Playwright that disables one more fails here, naming it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';

describe('the test browser', { skip: chromiumUnavailable() }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser.close());

  it('keeps every feature Playwright turns off turned off, and turns off RenderDocument (a new frame at every navigation)', async () => {
    // The command line Playwright started it with, as this process's child (CDP's
    // Browser.getBrowserCommandLine needs --enable-automation, which Playwright does not pass
    // headless; Debian's /usr/bin/chromium-headless-shell is a script that passes its arguments on).
    // A thread or child of an earlier test may end while they are listed: passed over.
    const read = (path: string): string => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return '';
      }
    };
    const children = readdirSync('/proc/self/task').flatMap((task) => read(`/proc/self/task/${task}/children`).split(' ').filter(Boolean));
    const started = children.map((pid) => read(`/proc/${pid}/cmdline`).split('\0')).filter((args) => args.includes('--remote-debugging-pipe'));
    assert.equal(started.length, 1, 'the one browser of this test process');
    const switches = started[0]!;
    const disabled = switches.filter((value) => value.startsWith('--disable-features=')).map((value) => value.slice('--disable-features='.length).split(','));
    assert.ok(disabled.length >= 2, `Playwright's switch and the helper's: ${JSON.stringify(disabled)}`);
    const playwrights = disabled[0]!;
    const effective = new Set(disabled.at(-1));
    assert.ok(playwrights.includes('PaintHolding'), "the first is Playwright's own");
    assert.deepEqual(
      playwrights.filter((feature) => !effective.has(feature)),
      [],
      "features Playwright turns off that the helper's list (DISABLED_FEATURES) would turn back on",
    );
    assert.ok(effective.has('RenderDocument'));
  });
});
