import type { FastifyRequest } from 'fastify';
import { constantTimeEqual, hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { ClientRecord, Store } from '../store/types.ts';
import type { Params } from '../flows/types.ts';

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
 * Authenticates the client with HTTP Basic (client_secret_basic). Failures are
 * invalid_client with 401, whatever went wrong, so they tell an attacker nothing.
 */
export async function authenticateClient(store: Store, request: FastifyRequest, params: Params): Promise<ClientRecord> {
  const header = request.headers.authorization;
  if (params['client_secret'] !== undefined) {
    throw new OAuthError('invalid_client', 'client authentication must use HTTP Basic (client_secret_basic)');
  }
  const credentials = parseBasic(header);
  if (!credentials) throw new OAuthError('invalid_client', 'client authentication with HTTP Basic is required');
  if (params['client_id'] !== undefined && params['client_id'] !== credentials.id) {
    throw new OAuthError('invalid_client', 'client_id does not match the authenticated client');
  }
  const presented = hashSecret(credentials.secret);
  const client = await store.clients.get(credentials.id);
  if (!client || client.secretHash === null || !constantTimeEqual(presented, client.secretHash)) {
    throw new OAuthError('invalid_client', 'client authentication failed');
  }
  return client;
}
