/**
 * The standard claims an operator sets on an account (OIDC Core §5.1), checked before they
 * are stored: what is sent to apps must be what §5.1 says each claim is.
 */
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../core/display-text.ts';
import type { UserProfileChanges } from '../store/types.ts';
import { type Address, ADDRESS_MEMBERS, LOCALIZABLE_CLAIMS, type LocalizableClaim, type LocalizedNames } from '../store/users.ts';

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

/** §5.1 picture, profile, website: URLs of a picture or a web page; only http(s), for an <img> or a link in an app. */
function isWebUrl(value: string): boolean {
  if (value.length > MAX_PICTURE_LENGTH) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/**
 * §5.1 birthdate: "ISO 8601-1 YYYY-MM-DD format. The year MAY be 0000, indicating that it is
 * omitted. To represent only the year, YYYY format is allowed." A day that is in its month.
 */
function isBirthdate(value: string): boolean {
  if (/^\d{4}$/.test(value)) return true;
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!parts) return false;
  // A year omitted (0000) is read as a leap year, so that 0000-02-29 is a birthday too.
  const [year, month, day] = [Number(parts[1]) || 2000, Number(parts[2]), Number(parts[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return month >= 1 && month <= 12 && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * §5.1 phone_number: "E.164 is RECOMMENDED as the format of this Claim, for example, +1 (425)
 * 555-1212 or +56 (2) 687 2400. If the phone number contains an extension, it is RECOMMENDED
 * that the extension be represented using the RFC 3966 extension syntax, for example, +1 (604)
 * 555-1234;ext=5678." Held to the recommendation: a number with its country code (a + and
 * 7 to 15 digits, E.164 §6), spaced as people write it, so that apps can call it from anywhere.
 */
function isPhoneNumber(value: string): boolean {
  const match = /^\+([0-9 ()./-]+?)(;ext=[0-9]{1,10})?$/.exec(value);
  if (!match) return false;
  const digits = match[1]!.replace(/[^0-9]/g, '');
  return digits.length >= 7 && digits.length <= 15 && /^[1-9]/.test(digits);
}

type TextField = Exclude<keyof UserProfileChanges, 'emailVerified' | 'phoneNumberVerified' | 'localizedNames' | 'address'>;
type FlagField = 'emailVerified' | 'phoneNumberVerified';

/** Each text field's claim name (for messages) and check. */
const CHECKS: Readonly<Record<TextField, { readonly claim: string; readonly valid: (value: string) => boolean; readonly expected: string }>> = {
  name: { claim: 'name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  givenName: { claim: 'given_name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  familyName: { claim: 'family_name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  email: { claim: 'email', valid: (value) => value.length <= 320 && EMAIL.test(value), expected: 'an email address' },
  locale: { claim: 'locale', valid: (value) => value.length <= 35 && LANGUAGE_TAG.test(value), expected: 'a BCP 47 language tag such as en-GB' },
  zoneinfo: { claim: 'zoneinfo', valid: isTimeZone, expected: 'a time zone such as Europe/Paris' },
  picture: { claim: 'picture', valid: isWebUrl, expected: 'an http or https URL' },
  middleName: { claim: 'middle_name', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  nickname: { claim: 'nickname', valid: (value) => value.length <= MAX_NAME_LENGTH, expected: `at most ${MAX_NAME_LENGTH} characters` },
  profile: { claim: 'profile', valid: isWebUrl, expected: 'an http or https URL' },
  website: { claim: 'website', valid: isWebUrl, expected: 'an http or https URL' },
  // §5.1: "Values defined by this specification are female and male. Other values MAY be used".
  gender: { claim: 'gender', valid: (value) => value.length <= 64, expected: 'at most 64 characters (female, male, or another word)' },
  birthdate: { claim: 'birthdate', valid: isBirthdate, expected: 'a date as YYYY-MM-DD, or a year as YYYY (0000 for a year left out)' },
  phoneNumber: {
    claim: 'phone_number',
    valid: isPhoneNumber,
    expected: 'a phone number with its country code, such as +1 (425) 555-1212 or +44 20 7946 0958;ext=12 (E.164)',
  },
};

/** §5.1.1 address members' bounds; `formatted` and `street_address` "MAY contain multiple lines, separated by newlines". */
export const ADDRESS_BOUNDS: Readonly<Record<(typeof ADDRESS_MEMBERS)[number], { readonly max: number; readonly lines?: true }>> = {
  formatted: { max: 500, lines: true },
  street_address: { max: 300, lines: true },
  locality: { max: 100 },
  region: { max: 100 },
  postal_code: { max: 20 },
  country: { max: 100 },
};

/** The address as stored: each member trimmed (a multi-line one line by line), an empty one dropped; none left is null. */
function checkAddress(given: Address | null): { ok: true; address: Address | null } | { ok: false; claim: string; problem: string } {
  if (given === null) return { ok: true, address: null };
  const address: Record<string, string> = {};
  for (const [member, raw] of Object.entries(given)) {
    const bounds = ADDRESS_BOUNDS[member as (typeof ADDRESS_MEMBERS)[number]];
    if (bounds === undefined) return { ok: false, claim: 'address', problem: `${member} is not one of ${ADDRESS_MEMBERS.join(', ')}` };
    if (raw === null || raw === undefined) continue;
    if (typeof raw !== 'string') return { ok: false, claim: `address.${member}`, problem: 'must be text' };
    const value =
      bounds.lines === true
        ? raw
            .split(/\r?\n/)
            .map((line) => line.trim())
            .filter(Boolean)
            .join('\n')
        : raw.trim();
    if (value === '') continue;
    if (value.length > bounds.max) return { ok: false, claim: `address.${member}`, problem: `must be at most ${bounds.max} characters` };
    // Lines apart, what apps show: no controls or bidi overrides (core/display-text.ts).
    if (value.split('\n').some(hasUnsafeCharacters) || (!bounds.lines && value.includes('\n')))
      return { ok: false, claim: `address.${member}`, problem: UNSAFE_CHARACTERS_RULE };
    address[member] = value;
  }
  return { ok: true, address: Object.keys(address).length === 0 ? null : address };
}

export type ProfileCheck =
  | { readonly ok: true; readonly changes: UserProfileChanges }
  | { readonly ok: false; readonly claim: string; readonly problem: string };

/**
 * The changes as stored: each text trimmed, an empty one clearing the claim (null); or the
 * first claim that is not what §5.1 says it is.
 */
export function checkProfile(changes: UserProfileChanges): ProfileCheck {
  const checked: Record<string, string | boolean | Address | null> = {};
  for (const [field, raw] of Object.entries(changes) as [keyof UserProfileChanges, string | boolean | Address | null | undefined][]) {
    if (raw === undefined) continue;
    if (field === 'localizedNames') continue;
    if (field === 'address') {
      const address = checkAddress(raw as unknown as Address | null);
      if (!address.ok) return address;
      checked[field] = address.address as never;
      continue;
    }
    if (field === 'emailVerified' || field === 'phoneNumberVerified') {
      checked[field satisfies FlagField] = raw === true;
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
export function mergeLocalizedNames(
  kept: LocalizedNames,
  given: LocalizedNamesInput,
): { ok: true; names: LocalizedNames } | { ok: false; claim: string; problem: string } {
  const names: Record<string, Partial<Record<LocalizableClaim, string>>> = {};
  for (const [tag, claims] of Object.entries(kept)) names[tag] = { ...claims };
  for (const [raw, claims] of Object.entries(given)) {
    let tag: string | undefined;
    try {
      tag = raw.length <= 35 && LANGUAGE_TAG.test(raw) ? Intl.getCanonicalLocales(raw)[0] : undefined;
    } catch {
      tag = undefined;
    }
    if (tag === undefined)
      return { ok: false, claim: 'localized_names', problem: `${JSON.stringify(raw.slice(0, 40))}: must be a BCP 47 language tag such as ja-Kana-JP` };
    if (claims === null) {
      delete names[tag];
      continue;
    }
    const entry = { ...names[tag] };
    for (const [claim, value] of Object.entries(claims)) {
      if (!(LOCALIZABLE_CLAIMS as readonly string[]).includes(claim))
        return { ok: false, claim: 'localized_names', problem: `${tag}: ${claim} is not one of ${LOCALIZABLE_CLAIMS.join(', ')}` };
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
