/**
 * The secrets of the events outbox follow the key encryption key as the signing keys and the
 * providers' secrets do (tokens/key-encryption.ts, tokens/secret-box.ts): run at start, it seals
 * again under the first KEK every webhook signing secret (and the one a rotation replaced,
 * still signing during its grace period) and every Shared Signals push Authorization header
 * sealed under an older one. Rotating the KEK (`NEW,OLD`, restart, then `NEW` alone) thus
 * carries them over: without this, the restart on `NEW` alone would leave every webhook
 * unable to sign, each message failing until it is a dead letter.
 */
import type { Store } from '../../store/types.ts';
import type { KeyEncryption } from '../../tokens/key-encryption.ts';
import { secretBox } from '../../tokens/secret-box.ts';
import { streamSecretOwner } from '../ssf/streams.ts';
import { secretOwner } from './message.ts';

/** Returns how many webhooks and streams were sealed again. */
export async function resealOutboxSecrets(store: Pick<Store, 'webhooks' | 'ssf'>, encryption: KeyEncryption): Promise<number> {
  const box = secretBox(encryption);
  let changed = 0;
  for (const webhook of await store.webhooks.list()) {
    const previous = webhook.previousSecret;
    if (!encryption.needsEncrypting(webhook.secret) && (previous === null || !encryption.needsEncrypting(previous))) continue;
    const owner = secretOwner(webhook.id);
    const again = (sealed: Readonly<Record<string, unknown>>) => box.seal(owner, box.open(owner, sealed));
    if (await store.webhooks.reseal(webhook.id, again(webhook.secret), previous === null ? null : again(previous))) changed += 1;
  }
  for (const stream of await store.ssf.listAllStreams()) {
    if (stream.authorizationHeader === null || !encryption.needsEncrypting(stream.authorizationHeader)) continue;
    const owner = streamSecretOwner(stream.id);
    if (await store.ssf.saveStream({ ...stream, authorizationHeader: box.seal(owner, box.open(owner, stream.authorizationHeader)) })) changed += 1;
  }
  return changed;
}
