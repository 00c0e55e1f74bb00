/** The shell blocks of a docs page, as the docs tests read them (docs/deployment.md's image and Kubernetes sections). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

/** The page's ```sh block that starts with `firstLine`, its continued lines joined. */
export function shellBlock(page: string, firstLine: string): string {
  const markdown = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8');
  const found = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!).find((body) => body.startsWith(firstLine));
  assert.ok(found, `${page} has a sh block starting ${firstLine}`);
  return found.replace(/\\\n\s*/g, ' ');
}

/** A shell line's words, with '…' and "…" quoting (all the pages' commands use). */
export function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}
