import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { HOME_PATH, LOCALE_PATH } from '../core/endpoints.ts';
import { shippedLocale } from '../config/locales.ts';
import type { RawParams } from '../core/protocol.ts';
import { messages } from '../ui/i18n.ts';
import { negotiateLocale } from '../ui/negotiate.ts';
import type { Site, Ui } from '../ui/pages.ts';
import type { AppDeps } from './deps.ts';
import { rawForm } from './form.ts';
import { safeReturnTo } from './session.ts';

/**
 * The language the person chose in the menu. Unlike the session and CSRF cookies it takes
 * no `__Host-` prefix: one planted by a sibling site could only change the language.
 */
export const LOCALE_COOKIE = 'tessera_locale';

/** A year: a choice of language is kept until the person makes another. */
const LOCALE_COOKIE_MAX_AGE = 365 * 86400;

/** A page address longer than this is not put in the menu's links: the path alone is. */
const MAX_HERE = 2048;

function single(params: RawParams, name: string): string | null {
  const value = params[name];
  return typeof value === 'string' ? value : null;
}

/** The query of a same-server path such as a `return_to`; null when it is not one. */
function queryOf(path: string | null): URLSearchParams | null {
  if (path === null || !path.startsWith('/') || path.length > 4096) return null;
  try {
    return new URL(path, 'http://tessera.invalid').searchParams;
  } catch {
    return null;
  }
}

/**
 * `ui_locales` as the app sent it: on the authorization request itself, or on the one a
 * sign-in or approval page returns to (its `return_to`, in the query or the posted form).
 */
function uiLocales(request: FastifyRequest): string | null {
  const query = (request.query ?? {}) as RawParams;
  const own = single(query, 'ui_locales') ?? single(rawForm(request), 'ui_locales');
  if (own !== null) return own;
  const returnTo = single(query, 'return_to') ?? single(rawForm(request), 'return_to');
  return queryOf(returnTo)?.get('ui_locales') ?? null;
}

/**
 * Where the menu brings the person back: this page; after a form post, the same page by GET
 * (with the post's `return_to`), or the home page where there is none.
 */
function here(request: FastifyRequest): string {
  const path = request.url.split('?')[0]!;
  if (request.method === 'GET') return request.url.length <= MAX_HERE ? request.url : path;
  if (!request.server.hasRoute({ method: 'GET', url: path })) return HOME_PATH;
  const returnTo = single(rawForm(request), 'return_to');
  return returnTo !== null && returnTo.length <= MAX_HERE ? `${path}?${new URLSearchParams({ return_to: returnTo }).toString()}` : path;
}

export interface PageHints {
  /** `ui_locales` of a request the route has resolved itself (a pushed authorization request). */
  readonly uiLocales?: string | null | undefined;
  /** The signed-in user's own language (the `locale` claim). */
  readonly user?: string | null | undefined;
  /** Where the language menu returns to, when not this page (an error page: its path alone). */
  readonly here?: string | undefined;
}

/** The language and look of the page this request is answered with (ui/negotiate.ts). */
export function pageUi(site: Site, request: FastifyRequest, hints: PageHints = {}): Ui {
  const locale = negotiateLocale(
    {
      uiLocales: hints.uiLocales ?? uiLocales(request),
      chosen: request.cookies?.[LOCALE_COOKIE] ?? null,
      user: hints.user ?? null,
      acceptLanguage: request.headers['accept-language'] ?? null,
    },
    site,
  );
  return { site, t: messages(locale), here: hints.here ?? here(request) };
}

/**
 * The address to go back to after a choice in the menu, without the `ui_locales` of the
 * app's request (there, or in the request a sign-in page returns to): the person's choice
 * is the newer one, and would otherwise lose to the app's for the rest of the flow.
 */
export function withoutUiLocales(path: string): string {
  const url = new URL(path, 'http://tessera.invalid');
  url.searchParams.delete('ui_locales');
  const inner = url.searchParams.get('return_to');
  if (inner?.startsWith('/')) url.searchParams.set('return_to', withoutUiLocales(safeReturnTo(inner)));
  const search = url.searchParams.toString();
  return `${url.pathname}${search ? `?${search}` : ''}`;
}

/** The language menu's links: remember the choice, go back. */
export const localeRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(LOCALE_PATH, { config: { page: true } }, async (request, reply) => {
    const query = request.query as RawParams;
    const chosen = shippedLocale(single(query, 'lang') ?? '');
    // An unknown language changes nothing: the page comes back as it was.
    if (chosen !== null && deps.config.site.locales.includes(chosen)) {
      reply.setCookie(LOCALE_COOKIE, chosen, {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.config.issuer.startsWith('https:'),
        maxAge: LOCALE_COOKIE_MAX_AGE,
      });
    }
    return reply.header('Cache-Control', 'no-store').redirect(withoutUiLocales(safeReturnTo(single(query, 'return_to'))), 303);
  });
};
