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
import { networkOf } from '../../core/networks.ts';

/** True when both addresses are in one /24 (IPv4) or /64 (IPv6). */
export function sameNetwork(a: string, b: string): boolean {
  const left = networkOf(a);
  return left !== null && left === networkOf(b);
}
