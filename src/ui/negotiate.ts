/**
 * Which language a page is shown in. In order, the first that names an offered language:
 * 1. the app's `ui_locales` (OIDC Core §3.1.2.1: "End-User's preferred languages and
 *    scripts for the user interface, represented as a space-separated list of BCP47
 *    [RFC5646] language tag values, ordered by preference");
 * 2. the choice the person made in the language menu (a cookie);
 * 3. the language of the signed-in user's account (the `locale` claim), when it has one;
 * 4. the browser's `Accept-Language` (RFC 9110 §12.5.4), by its quality values;
 * 5. `TESSERA_DEFAULT_LOCALE`.
 * A malformed or unknown tag is skipped without a word: the next one is tried.
 */
import type { Locale } from '../config/locales.ts';

/** More than this many entries in one list are ignored: no browser sends as many. */
const MAX_TAGS = 20;
const MAX_HEADER_LENGTH = 1024;

export interface LocaleHints {
  /** `ui_locales`, space-separated, as the app sent it. */
  readonly uiLocales?: string | null | undefined;
  /** The language menu's cookie. */
  readonly chosen?: string | null | undefined;
  /** The signed-in user's `locale`. */
  readonly user?: string | null | undefined;
  readonly acceptLanguage?: string | null | undefined;
}

export interface LocaleSettings {
  readonly locales: readonly Locale[];
  readonly defaultLocale: Locale;
}

/**
 * The tags of an Accept-Language value (RFC 9110 §12.5.4), most wanted first; `*` and
 * tags with q=0 ("not acceptable") are left out.
 */
export function parseAcceptLanguage(header: string): string[] {
  const entries: { tag: string; q: number; index: number }[] = [];
  for (const [index, item] of header.slice(0, MAX_HEADER_LENGTH).split(',').slice(0, MAX_TAGS).entries()) {
    const [rawTag = '', ...params] = item.split(';');
    const tag = rawTag.trim();
    let q = 1;
    for (const param of params) {
      const match = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/i.exec(param);
      if (match) q = Number(match[1]);
    }
    if (tag !== '' && tag !== '*' && q > 0) entries.push({ tag, q, index });
  }
  return entries.sort((a, b) => b.q - a.q || a.index - b.index).map((entry) => entry.tag);
}

/** Language and script: what must agree for a text to be readable (zh-TW is not zh-Hans). */
function languageAndScript(tag: string): string | null {
  try {
    const locale = new Intl.Locale(tag).maximize();
    return `${locale.language}-${locale.script ?? ''}`;
  } catch {
    return null;
  }
}

/**
 * The offered language `tag` asks for: the same tag, else one of the same language and
 * script (`pt-PT` reads `pt-BR`, `zh-CN` reads `zh-Hans`, `de-AT` reads `de`); null for a
 * malformed tag or one nothing offered matches.
 */
export function matchLocale(tag: string, offered: readonly Locale[]): Locale | null {
  if (tag.length > 64) return null;
  let canonical: string;
  try {
    [canonical = ''] = Intl.getCanonicalLocales(tag);
  } catch {
    return null;
  }
  const lower = canonical.toLowerCase();
  const exact = offered.find((locale) => locale.toLowerCase() === lower);
  if (exact) return exact;
  const wanted = languageAndScript(canonical);
  return wanted === null ? null : (offered.find((locale) => languageAndScript(locale) === wanted) ?? null);
}

/**
 * The terminal's language (POSIX: LC_ALL, then LC_MESSAGES, then LANG), as a BCP 47 tag:
 * `pt_BR.UTF-8` is `pt-BR`; `C` and `POSIX` name none.
 */
export function posixLocale(env: Readonly<Record<string, string | undefined>>): string | null {
  const value = env['LC_ALL'] || env['LC_MESSAGES'] || env['LANG'] || '';
  const tag = value.split(/[.@]/)[0]!.replace(/_/g, '-');
  return tag === '' || tag === 'C' || tag === 'POSIX' ? null : tag;
}

function firstMatch(tags: readonly string[], offered: readonly Locale[]): Locale | null {
  for (const tag of tags.slice(0, MAX_TAGS)) {
    const match = matchLocale(tag, offered);
    if (match) return match;
  }
  return null;
}

export function negotiateLocale(hints: LocaleHints, settings: LocaleSettings): Locale {
  const offered = settings.locales;
  const spaced = (value: string | null | undefined) =>
    value
      ? value
          .slice(0, MAX_HEADER_LENGTH)
          .split(' ')
          .filter((tag) => tag !== '')
      : [];
  return (
    firstMatch(spaced(hints.uiLocales), offered) ??
    firstMatch(spaced(hints.chosen), offered) ??
    firstMatch(spaced(hints.user), offered) ??
    firstMatch(hints.acceptLanguage ? parseAcceptLanguage(hints.acceptLanguage) : [], offered) ??
    settings.defaultLocale
  );
}
