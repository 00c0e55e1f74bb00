/**
 * What a started server does not load until it is used (docs/benchmarks.md, "Peak RSS"):
 * libraries few servers need and the catalogues of languages nobody has asked for yet. Each
 * held megabytes of every server process; a static import put back anywhere on the way
 * from `src/app.ts` would bring it back unnoticed, so this records every module the app's
 * import graph resolves, in a process of its own.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const RECORD = `
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
await import(${JSON.stringify(new URL('../src/app.ts', import.meta.url).href)});
const { messages } = await import(${JSON.stringify(new URL('../src/ui/i18n.ts', import.meta.url).href)});
const before = seen.length;
const title = messages('ja').text('signIn.title');
process.stdout.write(JSON.stringify({ atStart: seen.slice(0, before), onFirstUse: seen.slice(before), title }));
`;

describe('a started server', () => {
  it('loads no passkey, QR code or outbound HTTP library, and no catalogue but English, until one is used', () => {
    const output = execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', RECORD], { cwd: ROOT, encoding: 'utf8' });
    const { atStart, onFirstUse, title } = JSON.parse(output) as { atStart: string[]; onFirstUse: string[]; title: string };
    // The recording works: the app's own modules and the libraries it needs at start are seen.
    assert.ok(atStart.some((url) => url.endsWith('/src/ui/locales/en.ts')));
    assert.ok(atStart.some((url) => url.includes('/node_modules/fastify/')));
    const lazy = /\/node_modules\/(?:undici|@simplewebauthn\/server|qrcode)\/|\/src\/ui\/locales\/(?:de|fr|es|pt-BR|ja|zh-Hans|ar)\.ts$/;
    assert.deepEqual(atStart.filter((url) => lazy.test(url)), []);
    // A language is loaded, synchronously, the first time a message is asked for in it.
    assert.equal(title, 'ログイン');
    assert.ok(onFirstUse.some((url) => url.endsWith('/src/ui/locales/ja.ts')));
  });
});
