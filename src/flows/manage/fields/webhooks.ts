/**
 * What a webhook is: the one table the admin API's schemas, the console's webhook
 * form and `tessera webhook add` derive from (fields/field.ts). The rules each value must
 * follow are flows/manage/webhooks.ts's. A webhook is not changed once added (its secret is
 * rotated; to point it elsewhere or hear other events, add another and remove it).
 */
import { WEBHOOK_EVENT_TYPES } from '../../../core/webhook-events.ts';
import type { Field } from './field.ts';

export const WEBHOOK_FIELDS = [
  {
    name: 'id',
    type: { kind: 'text', max: 200 },
    description: 'Its id, given by the server',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  {
    name: 'url',
    type: { kind: 'text', max: 2048 },
    description: "Where each event is POSTed (http or https; the operator's choice of host)",
    create: true,
    update: false,
    required: true,
    cli: { option: 'url', value: 'URL' },
    form: { control: 'text', label: 'console.webhook.url', required: true },
  },
  {
    name: 'events',
    type: { kind: 'choices', choices: WEBHOOK_EVENT_TYPES },
    description: 'The event types it hears (docs/events.md)',
    create: true,
    update: false,
    required: true,
    cli: { option: 'event', value: 'TYPE' },
    form: { control: 'checks', label: 'console.webhook.events' },
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was added', create: false, update: false, cli: null, form: null },
  { name: 'updated_at', type: { kind: 'text', max: 40 }, description: 'When its secret last changed', create: false, update: false, cli: null, form: null },
  {
    name: 'previous_secret_expires_at',
    type: { kind: 'text', max: 40, nullable: true },
    description: 'Until when the secret it had before the last rotation still signs beside the new one (null: it does not)',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
] as const satisfies readonly Field[];

/** What every answer about a webhook holds, besides the table's fields. */
export const WEBHOOK_ALWAYS = ['id', 'url', 'events', 'created_at', 'updated_at', 'previous_secret_expires_at'] as const;
