/**
 * Comments say what a thing means, not which ticket asked for it: a reader of the code has the
 * code, not the tracker. A comment that cites an issue by its number (`issue` and digits) is
 * named here with its file and line, so that it is written as what the issue said.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const REPO = new URL('..', import.meta.url);

describe('the comments', () => {
  it('cite no issue numbers', () => {
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', 'src', 'test', 'bench', 'deploy', 'bin'], { cwd: REPO, encoding: 'utf8' })
      .split('\n')
      .filter((file) => /\.(ts|js)$/.test(file));
    assert.ok(files.length > 100, 'the source files were found');
    const citing: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(new URL(file, REPO), 'utf8');
      } catch {
        continue; // deleted in the work tree, still in the index
      }
      text.split('\n').forEach((line, index) => {
        // A comment line, or the comment at the end of a line of code; GitHub links name their own numbers.
        const comment = /^\s*(?:\/\/|\/?\*)(.*)$/.exec(line)?.[1] ?? /\s\/\/\s(.*)$/.exec(line)?.[1];
        if (comment !== undefined && /\bissues? #?\d+\b/i.test(comment) && !/github\.com/.test(comment)) citing.push(`${file}:${index + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(citing, []);
  });
});
