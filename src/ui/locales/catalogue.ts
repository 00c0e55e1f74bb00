import type en from './en.ts';

/**
 * A translation: every key English has, and no other. Here, not in i18n.ts, so that the
 * catalogues do not import the module that imports them.
 */
export type Catalogue = Readonly<Record<keyof typeof en, string>>;
