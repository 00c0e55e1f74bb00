import type { FastifyReply } from 'fastify';
import type { RawParams } from '../core/protocol.ts';
import type { ClientRecord } from '../store/types.ts';
import type { AppDeps } from './deps.ts';
import { allowClientTargets } from './security.ts';

/**
 * The application a sign-in continues to, as the authorization step put it in the form
 * (`client_id`, ui/pages.ts clientField): for the audit trail, and only when it is a client
 * registered here. Null for a sign-in of its own (/account, say).
 */
export async function signInClient(deps: AppDeps, form: RawParams): Promise<string | null> {
  return (await signInClientRecord(deps, form))?.id ?? null;
}

/** The registered client a sign-in form carries, whose name the page shows again after a mistake. */
export async function signInClientRecord(deps: AppDeps, form: RawParams): Promise<ClientRecord | null> {
  const requested = form['client_id'];
  if (typeof requested !== 'string' || requested.length === 0 || requested.length > 256) return null;
  return deps.store.clients.get(requested);
}

/**
 * The code page after a first step: its post ends (through /authorize, when no approval is
 * asked) at the client's redirect URI, and browsers hold a form post's redirects to its
 * form-action; so the registered redirect URIs of the client the sign-in continues to are
 * allowed, as on the sign-in page (http/sign-in.ts), and nothing else.
 */
export async function allowSignInTarget(deps: AppDeps, reply: FastifyReply, clientId: string | null): Promise<void> {
  allowClientTargets(reply, clientId === null ? null : await deps.store.clients.get(clientId));
}
