/** `tessera keys …`: arguments in, src/flows/manage/keys.ts, text out. */
import type { Config } from '../config/index.ts';
import { rotateKeys } from '../flows/manage/keys.ts';
import { keyManager } from '../main.ts';
import type { SigningKeyRecord } from '../store/types.ts';
import { operatorDeps, parse, when, withStore, type Io } from './common.ts';

async function keysRotate(config: Config, args: string[], io: Io): Promise<void> {
  parse(args, {});
  const added = await withStore(config, (store) => rotateKeys({ ...operatorDeps(config, store, io), keys: keyManager(config, store) }));
  for (const key of added) {
    io.stdout(`Published ${key.alg} key ${key.kid}; it signs from ${new Date(key.activatesAt).toISOString()}.\n`);
  }
}

/** A key's state at `now`: what an operator checks after a rotation. */
function keyState(key: SigningKeyRecord, now: number): string {
  if (key.expiresAt !== null && key.expiresAt <= now) return 'withdrawn';
  if (key.activatesAt > now) return `published, signs from ${when(key.activatesAt)}`;
  if (key.retiresAt !== null && key.retiresAt <= now) return `retired, published until ${when(key.expiresAt)}`;
  return 'signing';
}

async function keysList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const now = Date.now();
  const keys = await withStore(config, (store) => store.keys.listPublished(now));
  if (values.json) {
    io.stdout(`${JSON.stringify(keys.map((key) => ({ kid: key.kid, alg: key.alg, created_at: when(key.createdAt), activates_at: when(key.activatesAt), retires_at: key.retiresAt === null ? null : when(key.retiresAt), expires_at: key.expiresAt === null ? null : when(key.expiresAt), state: keyState(key, now) })))}\n`);
    return;
  }
  if (keys.length === 0) io.stdout('No signing keys yet: the server makes them when it first starts.\n');
  for (const key of keys) io.stdout(`${key.kid}  ${key.alg}  ${keyState(key, now)}  (created ${when(key.createdAt)})\n`);
}

export const KEY_COMMANDS = {
  'keys list': keysList,
  'keys rotate': keysRotate,
};
