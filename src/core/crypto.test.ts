import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomToken } from './crypto.ts';

test('randomToken never repeats a value, across refills of its entropy buffer', () => {
  const seen = new Set<string>();
  // 2,000 tokens of 32 bytes draw 64,000 bytes: the 4 KiB buffer is refilled 15 times.
  for (let i = 0; i < 2000; i++) {
    const token = randomToken(32);
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!seen.has(token), `token ${i} repeats an earlier one`);
    seen.add(token);
  }
});

test('randomToken gives each length its own bytes, larger than the buffer too', () => {
  assert.match(randomToken(16), /^[A-Za-z0-9_-]{22}$/);
  assert.match(randomToken(5000), /^[A-Za-z0-9_-]{6667}$/);
  // No token is all zero bytes: handed-out bytes are zeroed, never handed out again.
  for (let i = 0; i < 300; i++) assert.notEqual(randomToken(32), 'A'.repeat(43));
});
