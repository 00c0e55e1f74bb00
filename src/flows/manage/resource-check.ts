/**
 * `tessera resource check URL`: what an MCP server (or any protected resource) says of itself
 * in its protected resource metadata (RFC 9728), against the API registered here. An MCP
 * client finds this server through that document (the MCP authorization specification), so a
 * resource identifier, an authorization server or a scope that differs there is a sign-in that
 * fails on the client's side, far from the operator's eyes.
 */
import type { ResourceRecord } from '../../store/types.ts';

/** RFC 9728 §3: the well-known suffix of the metadata's address. */
export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * RFC 9728 §3.1: "inserting a well-known URI string into the protected resource's resource
 * identifier between the host component and the path and/or query components, if any". Given
 * the metadata's own address, the resource identifier it implies is the other way round.
 */
export function metadataLocation(url: string): { readonly metadataUrl: string; readonly resource: string } {
  const parsed = new URL(url);
  const rest = parsed.pathname.startsWith(PROTECTED_RESOURCE_WELL_KNOWN) ? parsed.pathname.slice(PROTECTED_RESOURCE_WELL_KNOWN.length) : null;
  // The metadata's own address: the suffix whole, then the end or the resource's path (not
  // /.well-known/oauth-protected-resourcex, a resource's path of its own).
  if (rest !== null && (rest === '' || rest.startsWith('/'))) return { metadataUrl: parsed.href, resource: `${parsed.origin}${rest}${parsed.search}` };
  const path = parsed.pathname === '/' ? '' : parsed.pathname;
  // The identifier as typed: `https://mcp.example.com` and `https://mcp.example.com/` are two.
  return { metadataUrl: `${parsed.origin}${PROTECTED_RESOURCE_WELL_KNOWN}${path}${parsed.search}`, resource: url };
}

/** One comparison: what was checked and, when it differs, how. */
export interface CheckLine {
  readonly what: 'resource' | 'authorization_servers' | 'scopes_supported';
  readonly ok: boolean;
  readonly text: string;
}

const strings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : null);

/**
 * The metadata fetched for `resource` against the API registered here with that identifier
 * (null: none) and this server's `issuer`: one line per comparison, each saying what differs.
 */
export function checkProtectedResource(
  resource: string,
  metadata: Readonly<Record<string, unknown>>,
  registered: ResourceRecord | null,
  issuer: string,
): CheckLine[] {
  const lines: CheckLine[] = [];
  const said = metadata['resource'];
  // RFC 9728 §3.3: "the value of the resource metadata parameter MUST be identical to the
  // protected resource's resource identifier value into which the well-known URI path suffix
  // was inserted to create the URL used to retrieve the metadata."
  if (typeof said !== 'string') lines.push({ what: 'resource', ok: false, text: 'the metadata has no resource (RFC 9728 §2: REQUIRED)' });
  else if (said !== resource)
    lines.push({ what: 'resource', ok: false, text: `the metadata says ${said}, but was fetched for ${resource}: they must be identical (RFC 9728 §3.3)` });
  else if (registered === null)
    lines.push({ what: 'resource', ok: false, text: `${resource} is not an API registered here (tessera resource add --identifier ${resource})` });
  else lines.push({ what: 'resource', ok: true, text: `${resource}, registered here as "${registered.name}"` });

  const servers = strings(metadata['authorization_servers']);
  if (servers === null)
    lines.push({ what: 'authorization_servers', ok: false, text: `the metadata lists no authorization_servers: an MCP client cannot find ${issuer}` });
  else if (!servers.includes(issuer))
    lines.push({ what: 'authorization_servers', ok: false, text: `${servers.join(' ') || '(none)'} does not include this server's issuer ${issuer}` });
  else lines.push({ what: 'authorization_servers', ok: true, text: `includes ${issuer}` });

  if (registered !== null) {
    const advertised = strings(metadata['scopes_supported']);
    const ours = registered.scopes.map((scope) => scope.name);
    if (advertised === null) {
      lines.push({
        what: 'scopes_supported',
        ok: metadata['scopes_supported'] === undefined,
        text:
          metadata['scopes_supported'] === undefined
            ? `not listed (RFC 9728 §2: RECOMMENDED); registered here: ${ours.join(' ')}`
            : 'scopes_supported is not a list of strings',
      });
    } else {
      const unknown = advertised.filter((scope) => !ours.includes(scope));
      const missing = ours.filter((scope) => !advertised.includes(scope));
      const differences = [
        ...(unknown.length > 0 ? [`not registered here: ${unknown.join(' ')}`] : []),
        ...(missing.length > 0 ? [`registered here but not listed: ${missing.join(' ')}`] : []),
      ];
      lines.push({
        what: 'scopes_supported',
        ok: differences.length === 0,
        text: differences.length === 0 ? `the same: ${ours.join(' ')}` : differences.join('; '),
      });
    }
  }
  return lines;
}
