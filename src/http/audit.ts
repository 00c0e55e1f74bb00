import type { AppDeps } from './deps.ts';

/** The application a sign-in is for, when it interrupted an authorization request (`return_to`). */
export async function signInClient(deps: AppDeps, returnTo: string): Promise<string | null> {
  if (!returnTo.startsWith('/oauth/authorize?')) return null;
  const requested = new URLSearchParams(returnTo.split('?')[1]).get('client_id');
  return requested && requested.length <= 256 ? ((await deps.store.clients.get(requested))?.id ?? null) : null;
}
