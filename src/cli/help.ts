/**
 * Help for the `tessera` command, per group, cut from the one usage text (main.ts USAGE), and
 * the one-line refusals that point to it (one wrong argument printed 71 lines).
 */
import { closest } from '../config/settings.ts';

/** One command of the usage text: its group (`user`), its name (`user add`) and its lines. */
export interface UsageEntry {
  readonly group: string;
  readonly name: string;
  readonly text: string;
}

/**
 * The usage text's commands: each starts on a line indented two spaces with the command's
 * words; the lines indented further continue it.
 */
export function usageEntries(usage: string): UsageEntry[] {
  const entries: { group: string; name: string; lines: string[] }[] = [];
  for (const line of usage.split('\n')) {
    const start = /^ {2}([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/.exec(line);
    if (start) {
      const group = start[1]!;
      // `user add …` names a subcommand; `events [--user …]` does not.
      const sub = start[2] !== undefined && !line.slice(2 + group.length + 1).startsWith('[') ? start[2] : undefined;
      entries.push({ group, name: sub ? `${group} ${sub}` : group, lines: [line] });
    } else if (/^ {3,}\S/.test(line) && entries.length > 0) {
      entries[entries.length - 1]!.lines.push(line);
    }
  }
  return entries.map((entry) => ({ group: entry.group, name: entry.name, text: entry.lines.join('\n') }));
}

export function groups(usage: string): string[] {
  return [...new Set(usageEntries(usage).map((entry) => entry.group))];
}

/** `tessera help GROUP`: that group's commands; null for a group there is not. */
export function groupHelp(usage: string, group: string): string | null {
  const entries = usageEntries(usage).filter((entry) => entry.group === group);
  if (entries.length === 0) return null;
  return `Usage: tessera ${group}${entries.some((entry) => entry.name !== group) ? ' <command>' : ''} [options]\n\n${entries.map((entry) => entry.text).join('\n')}\n`;
}

/** Where to read more, at the end of a refusal's one line. */
export function helpHint(group: string | null): string {
  return group === null ? 'run `tessera help`' : `run \`tessera help ${group}\``;
}

/** "did you mean …?" for a group or a command, or nothing. */
export function suggestion(word: string, candidates: Iterable<string>): string {
  const near = closest(word, candidates);
  return near === null ? '' : ` (did you mean \`tessera ${near}\`?)`;
}

/**
 * A command's first lines in the usage text, from its words and its options (a field table's
 * `cliUsageParts`): wrapped before `width`, each further line indented under the command's
 * arguments, as the hand-written entries are. `head` replaces the first line's start (a line
 * that continues the entry above, such as `any kind:`).
 */
export function usageLines(
  command: string,
  parts: readonly string[],
  { head = `  ${command}`, width = 104 }: { readonly head?: string; readonly width?: number } = {},
): string {
  const indent = ' '.repeat(2 + command.split(' ').slice(0, 2).join(' ').length + 1);
  const lines = [head];
  for (const part of parts) {
    const last = lines.length - 1;
    if (`${lines[last]!} ${part}`.length > width) lines.push(`${indent}${part}`);
    else lines[last] = `${lines[last]!} ${part}`;
  }
  return lines.join('\n');
}
