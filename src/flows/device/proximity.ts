/**
 * The proximity check of the cross-device flows BCP (draft-ietf-oauth-cross-device-security,
 * "Establish Proximity"): someone approving a device in front of them is usually on the same network as
 * it. A device that asked from another network may be an attacker's, whose code was sent
 * to the victim (RFC 8628 §5.4, remote phishing), so the approval page warns.
 *
 * "The same network" is the same IPv4 /24 or IPv6 /64: one home or office behind one NAT
 * shows one address, and an IPv6 home network is one /64. A phone on mobile data approving
 * the family TV is a false alarm the person can judge; the page says why it warns.
 */
import { isIPv4, isIPv6 } from 'node:net';

function ipv4Octets(address: string): number[] {
  return address.split('.').map(Number);
}

/** The eight 16-bit groups of an IPv6 address (with any embedded IPv4 tail expanded). */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = ipv4Octets(group);
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = address.indexOf('::');
  if (gap < 0) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/**
 * The network an address belongs to, or null if it is not an IP address: its /24 (IPv4) or
 * /64 (IPv6), one home or office; or with `size` 'large', its /16 or /48, what one provider
 * or site holds (RFC 6177: a site is given a /48).
 */
export function networkOf(ip: string, size: 'small' | 'large' = 'small'): string | null {
  const address = ip.trim().replace(/%.*$/, '');
  const v4 = (octets: number[]) => (size === 'small' ? `${octets.slice(0, 3).join('.')}.0/24` : `${octets.slice(0, 2).join('.')}.0.0/16`);
  if (isIPv4(address)) return v4(ipv4Octets(address));
  if (!isIPv6(address)) return null;
  const groups = ipv6Groups(address.toLowerCase());
  // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6);
    return v4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  }
  return size === 'small'
    ? `${groups
        .slice(0, 4)
        .map((group) => group.toString(16))
        .join(':')}::/64`
    : `${groups
        .slice(0, 3)
        .map((group) => group.toString(16))
        .join(':')}::/48`;
}

/** True when both addresses are in one /24 (IPv4) or /64 (IPv6). */
export function sameNetwork(a: string, b: string): boolean {
  const left = networkOf(a);
  return left !== null && left === networkOf(b);
}
