/**
 * IP networks: written as CIDR ranges (RFC 4632, RFC 4291 §2.3), for the networks a client's
 * devices may start from; the network an address is in, for the proximity check and the limits
 * per network; and what the limits per address count an address as.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

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
 * An address as its IPv4 octets or IPv6 groups; null if it is not an IP address. An IPv4
 * client on a dual-stack socket arrives as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2): that is the
 * IPv4 address.
 */
function parseAddress(ip: string): { readonly v4: number[] } | { readonly v6: number[] } | null {
  const address = ip.trim().replace(/%.*$/, '');
  if (isIPv4(address)) return { v4: ipv4Octets(address) };
  if (!isIPv6(address)) return null;
  const groups = ipv6Groups(address.toLowerCase());
  if (isMapped(groups)) {
    const [high = 0, low = 0] = groups.slice(6);
    return { v4: [high >> 8, high & 0xff, low >> 8, low & 0xff] };
  }
  return { v6: groups };
}

function zeros(groups: readonly number[]): boolean {
  return groups.every((group) => group === 0);
}

/** Whether IPv6 groups are an IPv4-mapped address (`::ffff:0:0/96`, RFC 4291 §2.5.5.2). */
function isMapped(groups: readonly number[]): boolean {
  return zeros(groups.slice(0, 5)) && groups[5] === 0xffff;
}

function prefixOf(parsed: { readonly v4: number[] } | { readonly v6: number[] }, size: 'small' | 'large'): string {
  if ('v4' in parsed) return size === 'small' ? `${parsed.v4.slice(0, 3).join('.')}.0/24` : `${parsed.v4.slice(0, 2).join('.')}.0.0/16`;
  const kept = size === 'small' ? 4 : 3;
  return `${parsed.v6
    .slice(0, kept)
    .map((group) => group.toString(16))
    .join(':')}::/${kept * 16}`;
}

/**
 * The network an address belongs to, or null if it is not an IP address: its /24 (IPv4) or
 * /64 (IPv6), one home or office; or with `size` 'large', its /16 or /48, what one provider
 * or site holds (RFC 6177: a site is given a /48).
 */
export function networkOf(ip: string, size: 'small' | 'large' = 'small'): string | null {
  const parsed = parseAddress(ip);
  return parsed === null ? null : prefixOf(parsed, size);
}

/**
 * What a per-address limit counts a client address under: an IPv6 address's /64, an IPv4
 * address (IPv4-mapped IPv6 too) as it is; anything else as it is.
 *
 * One IPv6 host may hold a whole /64 (RFC 7934 §6: a host may be given new addresses "by
 * providing the host with a dedicated /64 prefix"; any VPS has one, and RFC 8981 temporary
 * addresses rotate within it): counted address by address, it would get 2^64 fresh counts, and
 * a limit per address would limit nothing (NIST SP 800-63B §5.2.2: the verifier "SHALL
 * implement controls to protect against online guessing attacks"). An IPv4 address is
 * counted alone: a /24 holds many homes and offices, and the people behind one NAT already
 * share one count.
 */
export function countedAddress(ip: string): string {
  const parsed = parseAddress(ip);
  if (parsed === null) return ip;
  return 'v4' in parsed ? parsed.v4.join('.') : prefixOf(parsed, 'small');
}

/** A CIDR range in one canonical spelling (`192.0.2.0/24`; a bare address gets /32 or /128); null when it is none. */
export function normalizeCidr(value: string): string | null {
  const [address = '', prefix, extra] = value.trim().split('/');
  if (extra !== undefined) return null;
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : 0;
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return null;
  const bits = prefix === undefined ? max : Number(prefix);
  if (bits > max) return null;
  return `${address.toLowerCase()}/${bits}`;
}

/** An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d. */
function unmapped(ip: string): string {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip.trim());
  return match ? match[1]! : ip.trim().replace(/%.*$/, '');
}

/** True when `ip` is in one of `networks` (CIDR ranges as `normalizeCidr` writes them). */
export function inNetworks(ip: string, networks: readonly string[]): boolean {
  const address = unmapped(ip);
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  if (family === null) return false;
  const list = new BlockList();
  for (const network of networks) {
    const [base = '', bits = ''] = network.split('/');
    const baseFamily = isIPv4(base) ? 'ipv4' : 'ipv6';
    if (baseFamily === family) list.addSubnet(base, Number(bits), family);
  }
  return list.check(address, family);
}

/**
 * The IPv4 address an IPv6 address carries, where the network would deliver it to that IPv4
 * host: IPv4-mapped (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2), IPv4-compatible (`::a.b.c.d`,
 * §2.5.5.1), NAT64's well-known prefix (`64:ff9b::/96`, RFC 6052 §2.1) and 6to4
 * (`2002:AABB:CCDD::/48`, RFC 3056 §2). Else the address as it is. A request to
 * `64:ff9b::a00:1` on an IPv6-only host behind DNS64/NAT64 reaches 10.0.0.1. Read from the
 * eight groups, not the text, so that every spelling counts: `::ffff:10.0.0.1` and
 * `::ffff:a00:1`, and `2002:a01::1` for 10.1.0.0, whose zero groups are compressed away.
 */
function embeddedIPv4(ip: string): string {
  const address = unmapped(ip);
  if (!isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  const at = carriedAt(groups);
  if (at === null) return address;
  const [high = 0, low = 0] = groups.slice(at, at + 2);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** Where the two groups of the IPv4 address that IPv6 `groups` carry start (see `embeddedIPv4`); null when they carry none. */
function carriedAt(groups: readonly number[]): number | null {
  if (groups[0] === 0x2002) return 1;
  if (isMapped(groups)) return 6;
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(groups.slice(2, 6))) return 6;
  // :: and ::1 are IPv6's own unspecified and loopback addresses, not IPv4-compatible ones.
  if (zeros(groups.slice(0, 6))) return groups[6] === 0 && (groups[7] ?? 0) <= 1 ? null : 6;
  return null;
}

const PRIVATE = new BlockList();
for (const [base, bits] of [
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['0.0.0.0', 8],
] as const)
  PRIVATE.addSubnet(base, bits, 'ipv4');
for (const [base, bits] of [
  ['fc00::', 7],
  ['fe80::', 10],
  // NAT64's local-use prefix (RFC 8215): the operator's own translator, into their own network.
  ['64:ff9b:1::', 48],
] as const)
  PRIVATE.addSubnet(base, bits, 'ipv6');

/**
 * Whether a URL's host is an IP address in a private or link-local range (RFC 1918, RFC 6598,
 * RFC 3927, RFC 4193, RFC 4291 §2.5.6): a request the server makes there reaches its own
 * network (a cloud metadata service at 169.254.169.254). Loopback is not among them: it is
 * the operator's own machine. A name is not resolved here.
 */
export function isPrivateNetworkHost(hostname: string): boolean {
  const address = embeddedIPv4(hostname.replace(/^\[|\]$/g, ''));
  if (isIPv4(address)) return PRIVATE.check(address, 'ipv4');
  if (isIPv6(address)) return PRIVATE.check(address, 'ipv6');
  return false;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addAddress('::', 'ipv6');

/**
 * Whether a URL's host is this machine: an address in 127.0.0.0/8 or ::1 (IPv4-mapped too),
 * the unspecified address, or the name `localhost` or one under it (RFC 6761 §6.3: such
 * names resolve to loopback). Other names are not resolved here.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const address = embeddedIPv4(host);
  if (isIPv4(address)) return LOOPBACK.check(address, 'ipv4') || address === '0.0.0.0';
  if (isIPv6(address)) return LOOPBACK.check(address, 'ipv6');
  return false;
}

/**
 * Whether an address (not a name) is one a request from the server must not reach on an
 * outsider's say-so: private, link-local, shared or loopback (the server itself).
 */
export function isInternalAddress(ip: string): boolean {
  const address = embeddedIPv4(ip.replace(/^\[|\]$/g, ''));
  if (isIPv4(address)) return PRIVATE.check(address, 'ipv4') || LOOPBACK.check(address, 'ipv4');
  if (isIPv6(address)) return PRIVATE.check(address, 'ipv6') || LOOPBACK.check(address, 'ipv6');
  return false;
}
