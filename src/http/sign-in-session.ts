import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthMethod } from '../core/auth-methods.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { continuedSid } from '../flows/sign-in.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import type { AppDeps } from './deps.ts';
import { currentSession, endSession, startSession } from './session.ts';

/**
 * Signs `user` in in this browser, whichever way they proved themselves (`amr`): a new
 * session id at every sign-in, so an id planted before it is worth nothing; the OIDC session
 * (`sid`) continues when the same person signs in again, and an earlier session of someone
 * else in this browser ends with its logout tokens sent.
 */
export async function beginSession(
  deps: AppDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  user: UserRecord,
  amr: readonly AuthMethod[],
): Promise<SessionRecord> {
  const sid = continuedSid(await currentSession(deps, request), user);
  const ended = await endSession(deps, request, reply);
  if (ended && ended.sid !== sid) await sendLogoutTokens(deps, [ended], request.log);
  return startSession(deps, request, reply, user.id, sid, amr);
}
