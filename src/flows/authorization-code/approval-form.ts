/**
 * The approval page carries the authorization request in hidden fields, and the decision
 * posts them back. The person approved what the page showed: a decision whose fields were
 * changed on the way (a `scope` widened by a script, an extension or a hand-edited form)
 * must not be approved as if it had been shown. The page therefore carries a MAC
 * of its fields, keyed by the server and bound to the browser's session; a decision is taken
 * only with the fields the MAC was made for.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type FormFields = Readonly<Record<string, string | readonly string[]>>;

/** The hidden field that carries the MAC. */
export const APPROVAL_MAC_FIELD = 'request_mac';

function canonical(fields: FormFields): string {
  return JSON.stringify(
    Object.keys(fields)
      .filter((name) => name !== APPROVAL_MAC_FIELD)
      .sort()
      .map((name) => [name, fields[name]]),
  );
}

/** The MAC of `fields` (less the approval MAC's own) for `binding`: what the fields were shown with. */
export function fieldsMac(secret: Uint8Array, binding: string, fields: FormFields): string {
  return createHmac('sha256', secret)
    .update(`${binding}\n${canonical(fields)}`)
    .digest('base64url');
}

/** The MAC of the fields an approval page shows, for the session it is shown to. */
export function approvalFormMac(secret: Uint8Array, sessionIdHash: string, fields: FormFields): string {
  return fieldsMac(secret, sessionIdHash, fields);
}

/** Whether a decision's fields are the ones shown to this session. */
export function approvalFormMatches(secret: Uint8Array, sessionIdHash: string, fields: FormFields, mac: unknown): boolean {
  if (typeof mac !== 'string' || mac.length > 64) return false;
  const expected = Buffer.from(approvalFormMac(secret, sessionIdHash, fields));
  const given = Buffer.from(mac);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
