import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lookalikeOf } from './lookalike.ts';

describe('names that look alike', () => {
  it('finds a name under case, spacing, NFKC and the confusable skeleton, and nothing else', async () => {
    const operators = ['PayPal', 'Admin Console'];
    for (const name of [
      'paypal',
      'PAYPAL',
      'PAYPAI',
      'P\u0430yP\u0430l',
      '\u03a1ayPal',
      '\uff30\uff41\uff59\uff30\uff41\uff4c',
      '\ud835\udc0f\ud835\udc1a\ud835\udc32\ud835\udc0f\ud835\udc1a\ud835\udc25',
      'ADMIN CONSOLE',
      'Adrnin  Console',
    ]) {
      assert.notEqual(await lookalikeOf(name, operators), null, name);
    }
    for (const name of ['PayPal Helper', 'Pay Pal', 'Admin', 'Console Admin']) assert.equal(await lookalikeOf(name, operators), null, name);
  });
});
