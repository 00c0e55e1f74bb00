/** `tessera keys …`: arguments in, src/flows/manage/keys.ts, text out. */
import type { Config } from '../config/index.ts';
import { keyJson, keyState, listKeys, rotateKeys } from '../flows/manage/keys.ts';
import { keyManager } from '../main.ts';
import { operatorDeps, parse, when, withStore, type Io } from './common.ts';

async function keysRotate(config: Config, args: string[], io: Io): Promise<void> {
  parse(args, {});
  const added = await withStore(config, (store) => rotateKeys({ ...operatorDeps(config, store, io), keys: keyManager(config, store) }));
  for (const key of added) {
    io.stdout(`Published ${key.alg} key ${key.kid}; it signs from ${new Date(key.activatesAt).toISOString()}.\n`);
  }
}

async function keysList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const now = Date.now();
  const keys = await withStore(config, (store) => listKeys({ store }, now));
  if (values.json) {
    io.stdout(`${JSON.stringify(keys.map((key) => keyJson(key, now)))}\n`);
    return;
  }
  if (keys.length === 0) io.stdout('No signing keys yet: the server makes them when it first starts.\n');
  for (const key of keys) io.stdout(`${key.kid}  ${key.alg}  ${keyState(key, now)}  (created ${when(key.createdAt)})\n`);
}

export const KEY_COMMANDS = {
  'keys list': keysList,
  'keys rotate': keysRotate,
};
