import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inNetworks, normalizeCidr } from './networks.ts';

describe('CIDR networks', () => {
  it('writes ranges one way and refuses what is not one', () => {
    assert.equal(normalizeCidr(' 192.0.2.0/24 '), '192.0.2.0/24');
    assert.equal(normalizeCidr('198.51.100.7'), '198.51.100.7/32');
    assert.equal(normalizeCidr('2001:DB8::/48'), '2001:db8::/48');
    for (const bad of ['192.0.2.0/33', '2001:db8::/129', 'office', '192.0.2.0/24/1', '192.0.2.0/x', '']) assert.equal(normalizeCidr(bad), null, bad);
  });

  it('finds an address in its range, IPv4-mapped IPv6 included, and nothing else', () => {
    const networks = ['192.0.2.0/24', '2001:db8:1::/48'];
    assert.ok(inNetworks('192.0.2.200', networks));
    assert.ok(inNetworks('::ffff:192.0.2.9', networks));
    assert.ok(inNetworks('2001:db8:1:ffff::1', networks));
    assert.ok(!inNetworks('192.0.3.1', networks));
    assert.ok(!inNetworks('2001:db8:2::1', networks));
    assert.ok(!inNetworks('unknown', networks));
  });
});
