/**
 * The languages Tessera's pages are written in, as BCP 47 tags (RFC 5646): one catalogue
 * each in src/ui/locales/<tag>.ts. English is the source every other catalogue translates.
 */
export const LOCALES = ['en', 'de', 'fr', 'es', 'pt-BR', 'ja', 'zh-Hans', 'ar'] as const;

export type Locale = (typeof LOCALES)[number];

/** The shipped tag `tag` names, compared without regard to case (RFC 5646 §2.1.1); null if none. */
export function shippedLocale(tag: string): Locale | null {
  const lower = tag.trim().toLowerCase();
  return LOCALES.find((locale) => locale.toLowerCase() === lower) ?? null;
}
