/**
 * Values typed by strangers (a username at /login, a user agent) printed in the command's
 * text output. Raw, a newline forges a whole line (`signin.succeeded user=admin`), ESC and
 * CSI sequences drive the operator's terminal, CR and BEL rewrite or hide what is shown, and
 * bidirectional controls (U+202E) reorder it (Trojan Source, CVE-2021-42574). Each such
 * character is written as an escape; a value holding a space, a quote, `=` or a backslash is
 * quoted, so that one field can never read as two.
 */

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e', '\\': '\\\\', '"': '\\"' };

// Cc: C0, DEL and C1 controls; Cf: format characters, the bidirectional controls
// (U+202A-202E, U+2066-2069, U+200E/F, U+061C) and zero-width ones; Zl, Zp: line and paragraph separators.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\\"]/gu;

/** One value, safe to print on a line of text: escaped, and quoted when it could read as more than one field. */
export function textValue(value: string): string {
  const escaped = value.replace(UNSAFE, (char) => NAMED[char] ?? `\\u{${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}}`);
  return escaped === '' || /[\s=\\"]/u.test(escaped) ? `"${escaped}"` : escaped;
}
