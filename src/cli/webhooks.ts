/** `tessera webhook …`: arguments in, src/flows/manage/webhooks.ts, text out (docs/events.md). */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { WEBHOOK_FIELDS } from '../flows/manage/fields/webhooks.ts';
import {
  addWebhook,
  deliveryJson,
  listDeliveries,
  listWebhooks,
  removeWebhook,
  replayDeliveries,
  rotateWebhookSecret,
  webhookJson,
  type WebhookDeps,
} from '../flows/manage/webhooks.ts';
import type { Store } from '../store/types.ts';
import { loadKeyEncryption } from '../tokens/key-encryption.ts';
import { secretBox } from '../tokens/secret-box.ts';
import { operatorDeps, parse, when, wholeNumber, withStore, type Io } from './common.ts';
import { inputFromOptions } from './fields.ts';
import { LIST_OPTIONS, listQuery, replayed, writeDeliveries } from './outbox.ts';

/** The key encryption key seals the secret as the server's does, so that the server can open it to sign. */
function webhookDeps(config: Config, store: Store, io: Io): WebhookDeps {
  return { ...operatorDeps(config, store, io), secrets: secretBox(loadKeyEncryption(config.keyEncryption)) };
}

async function webhookAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { ...cliOptions(WEBHOOK_FIELDS, 'create').options, json: { type: 'boolean' } });
  const input = await inputFromOptions(WEBHOOK_FIELDS, 'create', values);
  const { webhook, secret } = await withStore(config, (store) => addWebhook(webhookDeps(config, store, io), input));
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...webhookJson(webhook), secret })}\n`);
    return;
  }
  io.stdout(
    `Webhook ${webhook.id} posts ${webhook.events.join(', ')} to ${webhook.url}\nSigning secret (shown only now; check webhook-signature with it, docs/events.md):\n  ${secret}\n`,
  );
}

async function webhookList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const webhooks = await withStore(config, (store) => listWebhooks({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(webhooks.map(webhookJson))}\n`);
    return;
  }
  if (webhooks.length === 0) io.stdout('No webhooks.\n');
  for (const webhook of webhooks) io.stdout(`${webhook.id}  ${webhook.url}  ${webhook.events.join(' ')}\n`);
}

async function webhookRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeWebhook(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed webhook ${positionals[0]!}: nothing more is sent to it.\n`);
}

async function webhookRotateSecret(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { grace: { type: 'string' }, json: { type: 'boolean' } }, 1);
  const grace = wholeNumber(values.grace, 9);
  const { webhook, secret } = await withStore(config, (store) =>
    rotateWebhookSecret(webhookDeps(config, store, io), positionals[0]!, grace === undefined ? {} : { grace_seconds: grace }),
  );
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...webhookJson(webhook), secret })}\n`);
    return;
  }
  const until =
    webhook.previousSecretExpiresAt === null ? 'The old secret signs no more.' : `The old secret also signs until ${when(webhook.previousSecretExpiresAt)}.`;
  io.stdout(`New signing secret of webhook ${webhook.id} (shown only now):\n  ${secret}\n${until}\n`);
}

async function webhookDeliveries(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, LIST_OPTIONS, 1);
  const deliveries = await withStore(config, (store) => listDeliveries({ store }, positionals[0]!, listQuery(values)));
  if (values.json) {
    io.stdout(`${JSON.stringify(deliveries.map(deliveryJson))}\n`);
    return;
  }
  writeDeliveries(io, deliveries);
}

async function webhookReplay(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { event: { type: 'string' } }, 1);
  const count = await withStore(config, (store) => replayDeliveries(operatorDeps(config, store, io), positionals[0]!, values.event ?? null));
  io.stdout(replayed(count, 'webhook-id'));
}

export const WEBHOOK_COMMANDS = {
  'webhook add': webhookAdd,
  'webhook list': webhookList,
  'webhook remove': webhookRemove,
  'webhook rotate-secret': webhookRotateSecret,
  'webhook deliveries': webhookDeliveries,
  'webhook replay': webhookReplay,
};
