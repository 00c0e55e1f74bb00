/**
 * An operator already signed in, for HTTP tests of the console that do not need a browser:
 * a session made by the session flow itself (flows/session/session.ts), with a second factor
 * and just now, as the console asks of a change, its cookie in a FormBrowser.
 */
import { randomToken } from '../../src/core/crypto.ts';
import type { AuthMethod } from '../../src/core/auth-methods.ts';
import type { OperatorRole } from '../../src/core/scopes.ts';
import { cookieNames, type CookiePort } from '../../src/flows/session/cookies.ts';
import { beginSession } from '../../src/flows/session/session.ts';
import type { FlowDeps } from '../../src/flows/types.ts';
import { FormBrowser } from './browser.ts';
import { manageDeps } from './manage.ts';
import type { TestServer } from './server.ts';

/** A browser signed in to `server` as a new user holding `role`, with `amr` (a password and a code, two factors, by default). */
export async function operatorBrowser(
  server: TestServer,
  role: OperatorRole,
  amr: readonly AuthMethod[] = ['pwd', 'otp', 'mfa'],
): Promise<{ browser: FormBrowser; username: string; csrf: string }> {
  const added = await server.addUser({
    username: `operator-${randomToken(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`,
  });
  await server.store.users.setRole(added.id, role);
  const user = (await server.store.users.get(added.id))!;
  const jar = new Map<string, string>();
  const cookies: CookiePort = { read: (name) => jar.get(name), set: (name, value) => void jar.set(name, value), clear: (name) => void jar.delete(name) };
  const deps = { ...manageDeps(server), tokens: undefined as never } as FlowDeps;
  await beginSession(deps, { cookies, ip: '127.0.0.1', userAgent: 'test', log: { warn: () => {} } }, user, amr, { clientId: null });
  const browser = new FormBrowser(server.url);
  for (const [name, value] of jar) browser.cookies.set(name, value);
  // The double-submit token the console's forms carry (http/session.ts csrfToken): the cookie, and the same in the form.
  const csrf = randomToken(32);
  browser.cookies.set(cookieNames(server.config).csrf, csrf);
  return { browser, username: added.username, csrf };
}
