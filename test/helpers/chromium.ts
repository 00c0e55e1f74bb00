import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { checkAccessibility } from './accessibility.ts';
import { REDIRECT_URI } from './server.ts';

export const CHROMIUM_PATH = process.env['TESSERA_CHROMIUM'] ?? '/usr/bin/chromium';

/**
 * Why browser tests cannot run here, or undefined when they can. In CI a missing browser is
 * a failure, not a skip: `.ci/run` installs Debian's chromium.
 */
export function chromiumUnavailable(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  if (process.env['CI']) throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}; .ci/run should have installed it`);
  return `browser tests skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium)`;
}

/**
 * Headless Debian Chromium with the flags this sandboxed, offline machine needs. Every page it
 * opens is checked by axe-core; `close()` fails on a violation (./accessibility.ts).
 */
export async function launchChromium(): Promise<Browser> {
  return checkAccessibility(await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  }));
}

/**
 * The URL of the first request `page` makes to the app's redirect URI (nothing listens
 * there): the request is caught and answered with a page of plain text, so the test reads the
 * code or error the server sent back without an app.
 */
export function catchRedirect(page: Page, body = 'back at the app'): Promise<URL> {
  return new Promise<URL>((resolve) => {
    void page.route(`${REDIRECT_URI}**`, async (route) => {
      resolve(new URL(route.request().url()));
      await route.fulfill({ status: 200, contentType: 'text/plain', body });
    });
  });
}

