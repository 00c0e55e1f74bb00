import type { FastifyRequest } from 'fastify';
import { forRequest, type AppDeps } from './deps.ts';

/** The application a sign-in is for, when it interrupted an authorization request (`return_to`). */
export async function signInClient(deps: AppDeps, returnTo: string): Promise<string | null> {
  if (!returnTo.startsWith('/oauth/authorize?')) return null;
  const requested = new URLSearchParams(returnTo.split('?')[1]).get('client_id');
  return requested && requested.length <= 256 ? ((await deps.store.clients.get(requested))?.id ?? null) : null;
}

/**
 * Records a completed sign-in (`signin.succeeded`), whichever way it ended: a password
 * alone, a password and a one-time code, or a passkey (`detail.amr`, RFC 8176).
 */
export async function recordSignIn(
  deps: AppDeps,
  request: FastifyRequest,
  user: { readonly id: string; readonly username?: string },
  amr: readonly string[],
  returnTo: string,
): Promise<void> {
  await forRequest(deps, request).events.emit({
    type: 'signin.succeeded',
    userId: user.id,
    username: user.username ?? null,
    clientId: await signInClient(deps, returnTo),
    detail: { amr: amr.join(' ') },
  });
}
