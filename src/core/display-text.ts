/**
 * What a name may hold: the one rule for every string that people and
 * operators read as a name, whatever it came from (the command line, the admin API, the
 * console, an upstream provider's claims, an app's registration): a person's name, given and
 * family names and those in other languages, a username or an e-mail address from upstream, an
 * app's, an API's, a provider's or a passkey's name, a scope's description.
 *
 * Refused (what an operator typed: one clear error) or taken out (what a provider or a browser
 * sent: the rest is kept) are the characters that change how the text around them is shown
 * rather than being shown: controls (Cc: C0, DEL and C1; a newline forges a line in
 * `tessera user list`, ESC drives the operator's terminal, CR rewrites the line), format
 * characters (Cf: the bidirectional controls U+202A-202E, U+2066-2069, U+200E/F and U+061C,
 * which reorder what follows, as in Trojan Source, CVE-2021-42574; invisible ones such as
 * U+200B, U+2060, U+FEFF) and the line and paragraph separators (Zl, Zp). The joiners U+200C
 * and U+200D stay: Persian, the Indic scripts and emoji sequences need them, and they move
 * nothing. The command line escapes the same characters in everything it prints (cli/text.ts).
 */

/** One character of those described above. */
export const UNSAFE_CHARACTER = /[\p{Cc}\p{Zl}\p{Zp}]|(?![\u200C\u200D])\p{Cf}/u;

const UNSAFE_CHARACTERS = new RegExp(UNSAFE_CHARACTER.source, 'gu');

/** Those that separate words or lines: a space in their place keeps the words apart. */
const SEPARATING = /[\t\n\v\f\r\u0085\u2028\u2029]/u;

/** The words of a refusal: `client_name must not contain …`. */
export const UNSAFE_CHARACTERS_RULE = 'must not contain control or bidirectional formatting characters (a line break, ESC, U+202E)';

/** Whether `value` holds a character no name may hold. */
export function hasUnsafeCharacters(value: string): boolean {
  return UNSAFE_CHARACTER.test(value);
}

/** `value` without the characters no name may hold: a line break or tab becomes a space, the others go. */
export function withoutUnsafeCharacters(value: string): string {
  return value.replace(UNSAFE_CHARACTERS, (char) => (SEPARATING.test(char) ? ' ' : ''));
}
