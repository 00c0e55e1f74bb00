/**
 * The standard claims an operator sets on an account (OIDC Core §5.1), checked before they
 * are stored: what is sent to apps must be what §5.1 says each claim is.
 */
import type { UserProfileChanges } from '../store/types.ts';

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

type TextField = Exclude<keyof UserProfileChanges, 'emailVerified'>;

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
    if (!check.valid(value)) return { ok: false, claim: check.claim, problem: `${JSON.stringify(value.slice(0, 80))}: must be ${check.expected}` };
    checked[field] = value;
  }
  return { ok: true, changes: checked as UserProfileChanges };
}
