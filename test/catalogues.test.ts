/**
 * Every language has every message, each parses as ICU MessageFormat, and each
 * uses the same placeholders, plurals and tags as English, so a translation can neither
 * lose a value nor show a raw `{count}`. A broken catalogue fails here, never on a page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isArgumentElement,
  isDateElement,
  isNumberElement,
  isPluralElement,
  isSelectElement,
  isTagElement,
  isTimeElement,
  parse,
  type MessageFormatElement,
} from '@formatjs/icu-messageformat-parser';
import { LOCALES } from '../src/config/locales.ts';
import { CATALOGUES, messages } from '../src/ui/i18n.ts';

/** What a message needs and offers: `count:plural`, `client:argument`, `<strong>`. */
function shape(elements: readonly MessageFormatElement[], into = new Set<string>()): Set<string> {
  for (const element of elements) {
    if (isArgumentElement(element) || isNumberElement(element) || isDateElement(element) || isTimeElement(element)) into.add(`${element.value}:argument`);
    else if (isTagElement(element)) {
      into.add(`<${element.value}>`);
      shape(element.children, into);
    } else if (isPluralElement(element) || isSelectElement(element)) {
      into.add(`${element.value}:${isPluralElement(element) ? 'plural' : 'select'}`);
      for (const option of Object.values(element.options)) shape(option.value, into);
    }
  }
  return into;
}

/** The plural categories a count up to 1000 falls in, in `locale` (Arabic: zero, one, two, few, many, other). */
const categories = new Map<string, Set<string>>();
function pluralCategories(locale: string): Set<string> {
  let found = categories.get(locale);
  if (!found) {
    const rules = new Intl.PluralRules(locale);
    found = new Set(Array.from({ length: 1001 }, (_, count) => rules.select(count)));
    categories.set(locale, found);
  }
  return found;
}

/** The plurals of `elements` that lack one of the language's categories. */
function missingPluralForms(elements: readonly MessageFormatElement[], categories: ReadonlySet<string>): string[] {
  const missing: string[] = [];
  for (const element of elements) {
    if (isPluralElement(element)) {
      const lacking = [...categories].filter((category) => !(category in element.options));
      if (lacking.length > 0) missing.push(`${element.value} lacks ${lacking.join(', ')}`);
    }
    if (isPluralElement(element) || isSelectElement(element))
      for (const option of Object.values(element.options)) missing.push(...missingPluralForms(option.value, categories));
    if (isTagElement(element)) missing.push(...missingPluralForms(element.children, categories));
  }
  return missing;
}

/** Everything wrong with one language's catalogue, measured against English. */
function problems(locale: string, catalogue: Readonly<Record<string, unknown>>): string[] {
  const found: string[] = [];
  const english: Readonly<Record<string, string>> = CATALOGUES.en;
  for (const key of Object.keys(english)) {
    const text = catalogue[key];
    if (typeof text !== 'string' || text.trim() === '') {
      found.push(`${locale}: ${key} is missing`);
      continue;
    }
    let elements: MessageFormatElement[];
    try {
      // Plural categories are the language's own (Arabic has six): `other` is required in every one.
      elements = parse(text, { requiresOtherClause: true, locale: new Intl.Locale(locale) });
    } catch (error) {
      found.push(`${locale}: ${key} does not parse: ${(error as Error).message}`);
      continue;
    }
    for (const lack of missingPluralForms(elements, pluralCategories(locale))) found.push(`${locale}: ${key}: ${lack}`);
    const wanted = [...shape(parse(english[key]!))].sort();
    const got = [...shape(elements)].sort();
    if (wanted.join() !== got.join()) found.push(`${locale}: ${key} has ${got.join(' ') || 'no values'}, English has ${wanted.join(' ') || 'none'}`);
  }
  for (const key of Object.keys(catalogue)) if (!(key in english)) found.push(`${locale}: ${key} is not an English message`);
  return found;
}

describe('message catalogues', () => {
  it('has one catalogue per offered language, each with every English message, parsing, with the same values, plurals and tags', () => {
    assert.deepEqual(Object.keys(CATALOGUES).sort(), [...LOCALES].sort());
    for (const locale of LOCALES) assert.deepEqual(problems(locale, CATALOGUES[locale]), [], locale);
  });

  it('finds a missing message, a lost placeholder, a plural without `other`, a changed tag and an unknown key', () => {
    const { 'signIn.title': _dropped, ...missing } = CATALOGUES.de;
    assert.deepEqual(problems('de', missing), ['de: signIn.title is missing']);
    assert.match(problems('de', { ...CATALOGUES.de, 'consent.title': 'Zulassen?' }).join(), /consent\.title has no values, English has client:argument/);
    assert.match(problems('de', { ...CATALOGUES.de, 'totp.on': 'An. {count, plural, one {# Code}}' }).join(), /totp\.on does not parse/);
    assert.match(problems('de', { ...CATALOGUES.de, 'signIn.toContinue': 'weiter zu <em>{client}</em>' }).join(), /signIn\.toContinue has /);
    assert.match(problems('de', { ...CATALOGUES.de, 'no.such': 'x' }).join(), /no\.such is not an English message/);
  });

  it('asks every plural for the forms of its own language: Arabic’s zero, two, few and many too', () => {
    assert.deepEqual(problems('ar', { ...CATALOGUES.ar, 'totp.on': '{count, plural, one {رمز واحد} other {# رموز}}' }), [
      'ar: totp.on: count lacks zero, two, few, many',
    ]);
    const ar = messages('ar');
    const forms = [0, 1, 2, 3, 11, 100].map((count) => ar.text('totp.on', { count }).replace(/[\d٠-٩]+/g, '#'));
    assert.equal(new Set(forms).size, 6, forms.join('\n'));
  });
});
