/** `tessera keys …`: arguments in, src/flows/manage/keys.ts, text out. */
import type { Config } from '../config/index.ts';
import { rotateKeys } from '../flows/manage/keys.ts';
import { keyManager } from '../main.ts';
import { operatorDeps, parse, withStore, type Io } from './common.ts';

async function keysRotate(config: Config, args: string[], io: Io): Promise<void> {
  parse(args, {});
  const added = await withStore(config, (store) => rotateKeys({ ...operatorDeps(config, store, io), keys: keyManager(config, store) }));
  for (const key of added) {
    io.stdout(`Published ${key.alg} key ${key.kid}; it signs from ${new Date(key.activatesAt).toISOString()}.\n`);
  }
}

export const KEY_COMMANDS = {
  'keys rotate': keysRotate,
};
