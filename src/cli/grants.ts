/** `tessera grant …`: arguments in, src/flows/manage/grants.ts, text out. */
import type { Config } from '../config/index.ts';
import { normalizeUsername } from '../core/username.ts';
import { grantActive, grantJson, listUserGrants, revokeGrant } from '../flows/manage/grants.ts';
import { operatorDeps, parse, UsageError, when, withStore, type Io } from './common.ts';

async function grantList(config: Config, args: string[], io: Io): Promise<void> {
  // --user, as `events` names a user; --username, as this command first did.
  const { values } = parse(args, { user: { type: 'string' }, username: { type: 'string' }, json: { type: 'boolean' } });
  const username = normalizeUsername(values.user ?? values.username ?? '');
  if (!username) throw new UsageError('--user is required');
  const listed = await withStore(config, (store) => listUserGrants({ store }, username));
  const now = Date.now();
  if (values.json) {
    io.stdout(`${JSON.stringify(listed.map((entry) => grantJson(entry, now)))}\n`);
    return;
  }
  if (listed.length === 0) io.stdout(`${username} has approved nothing that is not revoked.\n`);
  for (const { grant, clientName, apis } of listed) {
    const state = grantActive(grant, now) ? 'active' : 'no live tokens';
    const apiLines = apis.map((api) => `  API: ${api.name} (${api.identifier}): ${api.scopes.map((scope) => scope.description).join('; ')}\n`).join('');
    io.stdout(
      `${grant.id}  ${clientName} (${state})\n  scopes: ${grant.scope.join(' ')}\n${apiLines}  approved: ${when(grant.createdAt)}\n  last used: ${when(grant.lastUsedAt)}\n${grant.device ? `  device sign-in from ${grant.device.ip}${grant.device.userAgent ? ` (${grant.device.userAgent})` : ''}\n` : ''}`,
    );
  }
}

async function grantRevoke(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  const revoked = await withStore(config, (store) => revokeGrant(operatorDeps(config, store, io), id));
  io.stdout(revoked ? `Revoked grant ${id}; its tokens no longer work.\n` : `Grant ${id} was already revoked.\n`);
}

export const GRANT_COMMANDS = {
  'grant list': grantList,
  'grant revoke': grantRevoke,
};
