/**
 * What the command prints, made safe for the operator's terminal. Raw, a
 * value typed by a stranger (a username at /login, a user agent) or given by an upstream
 * provider forges a whole line with a newline (`signin.succeeded user=admin`), drives the
 * terminal with ESC and CSI sequences, rewrites or hides what is shown with CR and BEL, and
 * reorders it with bidirectional controls (U+202E: Trojan Source, CVE-2021-42574). Each such
 * character (core/display-text.ts, the rule names are held to) is written as an escape: `\n`,
 * `\r`, `\t`, `\e`, else `\uXXXX` as JSON writes it, so that the escapes are valid inside the
 * JSON that `--json` prints too.
 *
 * `terminalText` is applied to everything the command writes (cli/main.ts wraps its output
 * once, so no command can forget it): all but the line breaks and tabs the command lays its
 * text out with. A value printed on a line of its own text is escaped whole, line breaks
 * included, with `lineText`, or `textValue` where it must read as one field.
 */
import { UNSAFE_CHARACTER } from '../core/display-text.ts';

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e', '\\': '\\\\', '"': '\\"' };

/** One character as its escape: named, or its UTF-16 code units as `\uXXXX` (JSON's form). */
function escapeChar(char: string): string {
  return (
    NAMED[char] ??
    [...char]
      .flatMap((c) => (c.length === 2 ? [c.charCodeAt(0), c.charCodeAt(1)] : [c.charCodeAt(0)]))
      .map((unit) => `\\u${unit.toString(16).toUpperCase().padStart(4, '0')}`)
      .join('')
  );
}

/** Every unsafe character, line breaks and tabs included. */
const IN_A_LINE = new RegExp(UNSAFE_CHARACTER.source, 'gu');
/** Those, and what would end or start a quoted field. */
const IN_A_FIELD = new RegExp(`${UNSAFE_CHARACTER.source}|[\\\\"]`, 'gu');
/** Every unsafe character but the line breaks and tabs a command lays its own text out with. */
const IN_OUTPUT = new RegExp(`(?![\\n\\t])(?:${UNSAFE_CHARACTER.source})`, 'gu');

/** Text the command writes: nothing in it can drive the terminal; its own lines stay lines. */
export function terminalText(text: string): string {
  return text.replace(IN_OUTPUT, escapeChar);
}

/** One value on a line of text (`  name: …`): escaped whole, so it cannot start another line. */
export function lineText(value: string): string {
  return value.replace(IN_A_LINE, escapeChar);
}

/** One value, safe to print on a line of text: escaped, and quoted when it could read as more than one field. */
export function textValue(value: string): string {
  const escaped = value.replace(IN_A_FIELD, escapeChar);
  return escaped === '' || /[\s=\\"]/u.test(escaped) ? `"${escaped}"` : escaped;
}
