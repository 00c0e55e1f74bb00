/**
 * The standard claims an operator sets on an account (OIDC Core §5.1), checked before they
 * are stored: what is sent to apps must be what §5.1 says each claim is.
 */
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../core/display-text.ts';
import type { UserProfileChanges } from '../store/types.ts';
import { LOCALIZABLE_CLAIMS, type LocalizableClaim, type LocalizedNames } from '../store/users.ts';

const MAX_NAME_LENGTH = 200;
const MAX_PICTURE_LENGTH = 2048;
/** §5.1 locale: "a BCP47 [RFC5646] language tag", e.g. en-GB, fr, zh-Hant-TW. */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** §5.1 zoneinfo: "zoneinfo [zoneinfo] time zone database", e.g. Europe/Paris. */
function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return value.includes('/') || value === 'UTC';
  } catch {
    return false;
  }
}

/** §5.1 picture: "URL of the End-User's profile picture"; only http(s), for an <img> in an app. */
function isPictureUrl(value: string): boolean {
  if (value.length > MAX_PICTURE_LENGTH) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

type TextField = Exclude<keyof UserProfileChanges, 'emailVerified' | 'localizedNames'>;

/** Each text field's claim name (for messages) and check. */
const CHECKS: Readonly<Record<TextField, { readonly claim: string; readonly valid: (value: string) => boolean; readonly expected: string }>> = {
  name: { claim: 'name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  givenName: { claim: 'given_name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  familyName: { claim: 'family_name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  email: { claim: 'email', valid: (value) => value.length <= 320 && EMAIL.test(value), expected: 'an email address' },
  locale: { claim: 'locale', valid: (value) => value.length <= 35 && LANGUAGE_TAG.test(value), expected: 'a BCP 47 language tag such as en-GB' },
  zoneinfo: { claim: 'zoneinfo', valid: isTimeZone, expected: 'a time zone such as Europe/Paris' },
  picture: { claim: 'picture', valid: isPictureUrl, expected: 'an http or https URL' },
};

export type ProfileCheck =
  | { readonly ok: true; readonly changes: UserProfileChanges }
  | { readonly ok: false; readonly claim: string; readonly problem: string };

/**
 * The changes as stored: each text trimmed, an empty one clearing the claim (null); or the
 * first claim that is not what §5.1 says it is.
 */
export function checkProfile(changes: UserProfileChanges): ProfileCheck {
  const checked: Record<string, string | boolean | null> = {};
  for (const [field, raw] of Object.entries(changes) as [keyof UserProfileChanges, string | boolean | null | undefined][]) {
    if (raw === undefined) continue;
    if (field === 'localizedNames') continue;
    if (field === 'emailVerified') {
      checked[field] = raw === true;
      continue;
    }
    const value = typeof raw === 'string' ? raw.trim() : null;
    if (value === null || value === '') {
      checked[field] = null;
      continue;
    }
    const check = CHECKS[field];
    // What apps show and the operator's terminal prints: no line breaks, controls or bidi overrides (core/display-text.ts).
    if (hasUnsafeCharacters(value)) return { ok: false, claim: check.claim, problem: UNSAFE_CHARACTERS_RULE };
    if (!check.valid(value)) return { ok: false, claim: check.claim, problem: `${JSON.stringify(value.slice(0, 80))}: must be ${check.expected}` };
    checked[field] = value;
  }
  return { ok: true, changes: checked as UserProfileChanges };
}

/** More languages than a person is named in; bounds what one account makes every token carry. */
const MAX_NAME_LANGUAGES = 20;

/** Names in other languages as an operator gives them: by tag, each claim a name, or null or "" to remove it. */
export type LocalizedNamesInput = Readonly<Record<string, Readonly<Partial<Record<LocalizableClaim, string | null>>> | null>>;

/**
 * `kept` with the names in other languages given (OIDC Core §5.2: "a BCP47 language tag" after
 * `#`) laid over it: a tag given null, or a name given null or "", removes it; a tag left with
 * no name goes. Each tag in its canonical case (`ja-Kana-JP`), so that one language is kept once.
 */
export function mergeLocalizedNames(kept: LocalizedNames, given: LocalizedNamesInput): { ok: true; names: LocalizedNames } | { ok: false; claim: string; problem: string } {
  const names: Record<string, Partial<Record<LocalizableClaim, string>>> = {};
  for (const [tag, claims] of Object.entries(kept)) names[tag] = { ...claims };
  for (const [raw, claims] of Object.entries(given)) {
    let tag: string | undefined;
    try {
      tag = raw.length <= 35 && LANGUAGE_TAG.test(raw) ? Intl.getCanonicalLocales(raw)[0] : undefined;
    } catch {
      tag = undefined;
    }
    if (tag === undefined) return { ok: false, claim: 'localized_names', problem: `${JSON.stringify(raw.slice(0, 40))}: must be a BCP 47 language tag such as ja-Kana-JP` };
    if (claims === null) {
      delete names[tag];
      continue;
    }
    const entry = { ...names[tag] };
    for (const [claim, value] of Object.entries(claims)) {
      if (!(LOCALIZABLE_CLAIMS as readonly string[]).includes(claim)) return { ok: false, claim: 'localized_names', problem: `${tag}: ${claim} is not one of ${LOCALIZABLE_CLAIMS.join(', ')}` };
      const text = typeof value === 'string' ? value.trim() : '';
      if (text.length > MAX_NAME_LENGTH) return { ok: false, claim: `${claim}#${tag}`, problem: `must be at most ${MAX_NAME_LENGTH} characters` };
      if (hasUnsafeCharacters(text)) return { ok: false, claim: `${claim}#${tag}`, problem: UNSAFE_CHARACTERS_RULE };
      if (text === '') delete entry[claim as LocalizableClaim];
      else entry[claim as LocalizableClaim] = text;
    }
    if (Object.keys(entry).length === 0) delete names[tag];
    else names[tag] = entry;
  }
  if (Object.keys(names).length > MAX_NAME_LANGUAGES) return { ok: false, claim: 'localized_names', problem: `at most ${MAX_NAME_LANGUAGES} languages` };
  return { ok: true, names };
}
