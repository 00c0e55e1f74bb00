import type { FastifyRequest } from 'fastify';
import { digestsEqual, hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { ClientRecord, ResourceRecord, Store } from '../store/types.ts';
import { resourceIndicatorProblem } from '../flows/resources.ts';
import type { Params } from '../flows/types.ts';
import { bindClient } from './cors.ts';

/** Sent with every invalid_client (RFC 6749 §5.2: 401 and the scheme the client can use). */
export const BASIC_CHALLENGE = 'Basic realm="tessera", charset="UTF-8"';

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before Basic encoding (RFC 7617). */
function formDecode(value: string): string | null {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

export function parseBasic(header: string | undefined): { id: string; secret: string } | null {
  if (header === undefined) return null;
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  return id === null || secret === null || id === '' ? null : { id, secret };
}

/**
 * Identifies and authenticates the client. A confidential client uses HTTP Basic
 * (client_secret_basic); a public client (RFC 6749 §2.1, token_endpoint_auth_method `none`)
 * sends only its client_id in the form body (RFC 6749 §3.2.1). Mixing the two is refused:
 * a confidential client without its secret, or a public client presenting one. Failures are
 * invalid_client with 401, whatever went wrong, so they tell an attacker little.
 */
export async function authenticateClient(store: Store, request: FastifyRequest, params: Params, issuer: string): Promise<ClientRecord> {
  const client = await identifyClient(store, request, params);
  bindClient(request, client, issuer);
  return client;
}

async function identifyClient(store: Store, request: FastifyRequest, params: Params): Promise<ClientRecord> {
  if (params['client_secret'] !== undefined) {
    throw new OAuthError('invalid_client', 'client authentication must use HTTP Basic (client_secret_basic), not client_secret in the body');
  }
  const header = request.headers.authorization;
  if (header === undefined) {
    const clientId = params['client_id'];
    if (clientId === undefined) throw new OAuthError('invalid_client', 'client authentication is required: HTTP Basic, or client_id for a public client');
    const client = clientId.length <= 256 ? await store.clients.get(clientId) : null;
    if (!client) throw new OAuthError('invalid_client', 'client authentication failed');
    if (client.secretHash !== null) throw new OAuthError('invalid_client', 'this client must authenticate with HTTP Basic');
    return client;
  }
  const credentials = parseBasic(header);
  if (!credentials) throw new OAuthError('invalid_client', 'the Authorization header is not valid HTTP Basic');
  if (params['client_id'] !== undefined && params['client_id'] !== credentials.id) {
    throw new OAuthError('invalid_client', 'client_id does not match the authenticated client');
  }
  const presented = hashSecret(credentials.secret);
  const client = await store.clients.get(credentials.id);
  if (client && client.secretHash === null) throw new OAuthError('invalid_client', 'a public client has no secret to present');
  if (!client || !digestsEqual(presented, client.secretHash!)) {
    throw new OAuthError('invalid_client', 'client authentication failed');
  }
  return client;
}

/**
 * A resource server calling the introspection endpoint (RFC 7662 §2.1: "the protected
 * resource ... authenticate[s] with the authorization server") with HTTP Basic as its API's
 * identifier and the introspection secret `tessera resource add --introspection-secret`
 * printed. Null when the Basic user is no registered API, so the caller is tried as a
 * client; invalid_client when it is one and the secret is wrong or was never issued.
 */
export async function authenticateResourceServer(store: Store, request: FastifyRequest): Promise<ResourceRecord | null> {
  const credentials = parseBasic(request.headers.authorization);
  if (!credentials || credentials.id.length > 1024 || resourceIndicatorProblem(credentials.id) !== null) return null;
  const resource = await store.resources.get(credentials.id);
  if (!resource) return null;
  const presented = hashSecret(credentials.secret);
  if (resource.introspectionSecretHash === null || !digestsEqual(presented, resource.introspectionSecretHash)) {
    throw new OAuthError('invalid_client', 'resource server authentication failed');
  }
  return resource;
}
