/**
 * Every word a person reads comes from a message catalogue (src/ui/locales/<tag>.ts), in ICU
 * MessageFormat: placeholders `{name}`, plurals `{count, plural, one {…} other {…}}` and the
 * tags `<strong>`, `<code>` and `<em>`, formatted by FormatJS's intl-messageformat with the
 * plural rules and number formats of the language (Intl). Values are text: whatever a
 * client or a user sent is escaped, and markup comes only from the tags a translation uses.
 */
import { createRequire } from 'node:module';
import { IntlMessageFormat } from 'intl-messageformat';
import { LOCALES, type Locale } from '../config/locales.ts';
import { escapeHtml, SafeHtml } from './html.ts';
import type { Catalogue } from './locales/catalogue.ts';
import en from './locales/en.ts';

export type MessageKey = keyof typeof en;

export function isMessageKey(key: string): key is MessageKey {
  return Object.hasOwn(en, key);
}

/**
 * The catalogues other than English are loaded on first use, each when a page or the
 * terminal first speaks its language: the seven held 10-19 MiB of a started server, most of
 * it not V8's heap but what compiling them left behind (docs/benchmarks.md, "Peak RSS"), and
 * many servers only ever speak one or two. `require` loads the module synchronously, so
 * nothing that formats a message has to wait; the extension is this module's own (`.ts` run
 * from source, `.js` once built).
 */
const requireCatalogue = createRequire(import.meta.url);
const EXTENSION = import.meta.url.slice(import.meta.url.lastIndexOf('.'));
const loaded = new Map<Locale, Catalogue>([['en', en]]);

function catalogue(locale: Locale): Catalogue {
  let found = loaded.get(locale);
  if (found === undefined) {
    found = (requireCatalogue(`./locales/${locale}${EXTENSION}`) as { default: Catalogue }).default;
    loaded.set(locale, found);
  }
  return found;
}

export const CATALOGUES: Readonly<Record<Locale, Catalogue>> = Object.defineProperties(
  {} as Record<Locale, Catalogue>,
  Object.fromEntries(LOCALES.map((locale) => [locale, { enumerable: true, get: () => catalogue(locale) }])),
);

/** Each language's own name, as its menu entry shows it. */
export const LANGUAGE_NAMES: Readonly<Record<Locale, string>> = {
  en: 'English',
  de: 'Deutsch',
  fr: 'Français',
  es: 'Español',
  'pt-BR': 'Português (Brasil)',
  ja: '日本語',
  'zh-Hans': '简体中文',
  ar: 'العربية',
};

/** The scripts written right to left among the shipped languages (Arabic). */
const RIGHT_TO_LEFT: ReadonlySet<Locale> = new Set(['ar']);

export function direction(locale: Locale): 'ltr' | 'rtl' {
  return RIGHT_TO_LEFT.has(locale) ? 'rtl' : 'ltr';
}

/** What a message may be given: text and numbers, and markup already made safe (a `<time>`). */
export type MessageValues = Readonly<Record<string, string | number | SafeHtml>>;

type Part = string | SafeHtml;

const TAGS = ['strong', 'code', 'em'] as const;

function joinParts(parts: readonly Part[] | Part): string {
  if (!Array.isArray(parts)) return parts instanceof SafeHtml ? parts.value : escapeHtml(String(parts));
  return parts.map((part) => joinParts(part)).join('');
}

const compiled = new Map<string, IntlMessageFormat | null>();

/** The message compiled once; null when the catalogue's text does not parse (the tests catch that). */
function message(locale: Locale, key: MessageKey): IntlMessageFormat | null {
  const id = `${locale}\u0000${key}`;
  let format = compiled.get(id);
  if (format === undefined) {
    try {
      format = new IntlMessageFormat(CATALOGUES[locale][key], locale);
    } catch {
      format = null;
    }
    compiled.set(id, format);
  }
  return format;
}

function formatHtml(locale: Locale, key: MessageKey, values: MessageValues, links: Readonly<Record<string, string>>): string | null {
  const format = message(locale, key);
  if (format === null) return null;
  const tags = Object.fromEntries([
    ...TAGS.map((tag) => [tag, (chunks: Part[]) => new SafeHtml(`<${tag}>${joinParts(chunks)}</${tag}>`)] as const),
    ...Object.entries(links).map(([tag, href]) => [tag, (chunks: Part[]) => new SafeHtml(`<a href="${escapeHtml(href)}">${joinParts(chunks)}</a>`)] as const),
  ]);
  try {
    return joinParts(format.format<SafeHtml>({ ...values, ...tags }) as Part[] | Part);
  } catch {
    return null;
  }
}

/** The messages of one language. */
export class Messages {
  readonly locale: Locale;
  readonly dir: 'ltr' | 'rtl';

  constructor(locale: Locale) {
    this.locale = locale;
    this.dir = direction(locale);
  }

  /**
   * The message as markup, its values escaped. A message that fails to format in this
   * language (a broken translation) falls back to English, so the page is still shown.
   */
  html(key: MessageKey, values: MessageValues = {}, links: Readonly<Record<string, string>> = {}): SafeHtml {
    return new SafeHtml(formatHtml(this.locale, key, values, links) ?? formatHtml('en', key, values, links) ?? escapeHtml(key));
  }

  /** The message as plain text: for titles, attributes and the terminal. */
  text(key: MessageKey, values: MessageValues = {}): string {
    return unescapeHtml(this.html(key, values).value.replace(/<\/?(?:strong|code|em)>/g, ''));
  }

  /** A moment as the language writes it, in UTC (the server does not know the reader's zone). */
  date(ms: number): string {
    return dateFormat(this.locale).format(ms);
  }

  /** `date` in a `<time>` element, its machine-readable value beside it. */
  time(ms: number): SafeHtml {
    return new SafeHtml(`<time datetime="${new Date(ms).toISOString()}">${escapeHtml(this.date(ms))}</time>`);
  }

  /** "3 minutes ago", in the language's words and plural rules. */
  ago(then: number, now: number): string {
    const minutes = Math.floor(Math.max(0, now - then) / 60_000);
    if (minutes < 1) return this.text('time.justNow');
    const relative = new Intl.RelativeTimeFormat(this.locale, { numeric: 'always' });
    return minutes < 60 ? relative.format(-minutes, 'minute') : relative.format(-Math.floor(minutes / 60), 'hour');
  }
}

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

function unescapeHtml(value: string): string {
  return value.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]!);
}

const dateFormats = new Map<Locale, Intl.DateTimeFormat>();

function dateFormat(locale: Locale): Intl.DateTimeFormat {
  let format = dateFormats.get(locale);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, {
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZone: 'UTC',
      timeZoneName: 'short',
    });
    dateFormats.set(locale, format);
  }
  return format;
}

const MESSAGES: ReadonlyMap<Locale, Messages> = new Map(LOCALES.map((locale) => [locale, new Messages(locale)]));

export function messages(locale: Locale): Messages {
  return MESSAGES.get(locale)!;
}
