import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countedAddress, inNetworks, isInternalAddress, isLoopbackHost, isPrivateNetworkHost, normalizeCidr } from './networks.ts';

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

describe('the address a per-address limit counts', () => {
  it('counts an IPv6 address by its /64, whichever of its addresses and spellings', () => {
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::c8', '2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:1', '2001:db8:1:2::1%eth0'])
      assert.equal(countedAddress(address), '2001:db8:1:2::/64', address);
    assert.notEqual(countedAddress('2001:db8:1:3::1'), countedAddress('2001:db8:1:2::1'), 'the next /64 is another count');
  });

  it('counts an IPv4 address as it is, IPv4-mapped IPv6 in either spelling too, so that neighbours are counted apart', () => {
    assert.equal(countedAddress('198.51.100.1'), '198.51.100.1');
    assert.equal(countedAddress('::ffff:198.51.100.1'), '198.51.100.1');
    assert.equal(countedAddress('::FFFF:c633:6401'), '198.51.100.1');
    assert.notEqual(countedAddress('198.51.100.2'), countedAddress('198.51.100.1'));
  });

  it('leaves what is not an IP address as it is', () => {
    assert.equal(countedAddress('unknown'), 'unknown');
  });
});

describe('addresses a request from the server must not reach', () => {
  it('finds an internal IPv4 address however an IPv6 address carries it: mapped, compatible, NAT64 and 6to4, in either spelling', () => {
    for (const address of [
      '10.0.0.1',
      '::ffff:10.0.0.1',
      '::ffff:a00:1',
      '::10.0.0.1',
      '64:ff9b::10.0.0.1',
      '[64:ff9b::a00:1]',
      '2002:a00:1::1',
      '64:ff9b::a9fe:a9fe',
      // An IPv4 address ending in .0.0, whose zero groups the IPv6 text compresses away.
      '2002:a01::1',
      '2002:ac10::1',
      '2002:c0a8::1',
      '[2002:c0a8::]',
      '64:ff9b::a00:0',
      '::ffff:a00:0',
      '::ffff:c0a8:0',
      '::a00:0',
    ]) {
      assert.equal(isInternalAddress(address), true, address);
      assert.equal(isPrivateNetworkHost(address), true, address);
    }
    // ::1 and :: are IPv6's own loopback and unspecified addresses, not IPv4-compatible 0.0.0.1 and 0.0.0.0.
    for (const address of ['64:ff9b::7f00:1', '::ffff:7f00:1', '2002:7f00:1::', '2002:7f00::1', '::1', '[::1]', '::'])
      assert.equal(isLoopbackHost(address), true, address);
    // NAT64's local-use prefix (RFC 8215) is the operator's own network, whatever it carries.
    assert.equal(isInternalAddress('64:ff9b:1::808:808'), true);
  });

  it('lets public addresses through, NAT64 to a public IPv4 address included', () => {
    for (const address of [
      '8.8.8.8',
      '64:ff9b::808:808',
      '::ffff:808:808',
      '2001:4860:4860::8888',
      '2002:808:808::1',
      '2002:808::1',
      '64:ff9b::808:0',
      '2001:db8::a00:0',
    ]) {
      assert.equal(isInternalAddress(address), false, address);
    }
  });
});
