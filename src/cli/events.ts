/** `tessera events`: arguments in, src/flows/manage/events.ts, text out. */
import type { Config } from '../config/index.ts';
import { eventJson, listEvents, parseSince } from '../flows/manage/events.ts';
import { parse, wholeNumber, withStore, type Io } from './common.ts';
import { textValue } from './text.ts';

export async function eventsCommand(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    user: { type: 'string' },
    client: { type: 'string' },
    type: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  });
  const since = values.since === undefined ? undefined : parseSince(values.since, Date.now());
  const limit = wholeNumber(values.limit, 5);
  const events = await withStore(config, (store) =>
    listEvents(
      { store },
      {
        ...(values.user === undefined ? {} : { username: values.user }),
        ...(values.client === undefined ? {} : { clientId: values.client }),
        ...(values.type === undefined ? {} : { type: values.type }),
        ...(since === undefined ? {} : { since }),
        ...(limit === undefined ? {} : { limit }),
      },
    ),
  );
  if (values.json) {
    io.stdout(`${JSON.stringify(events.map(eventJson))}\n`);
    return;
  }
  if (events.length === 0) io.stdout('No events.\n');
  for (const event of events) {
    // Every value may have been typed by a stranger (a username at /login): escaped (cli/text.ts).
    const user = event.username ?? event.userId;
    const fields = [
      user ? `user=${textValue(user)}` : null,
      event.clientId ? `client=${textValue(event.clientId)}` : null,
      event.grantId ? `grant=${textValue(event.grantId)}` : null,
      event.ip ? `ip=${textValue(event.ip)}` : null,
      ...Object.entries(event.detail).map(([key, value]) => `${textValue(key)}=${typeof value === 'string' ? textValue(value) : JSON.stringify(value)}`),
    ].filter(Boolean);
    io.stdout(`${new Date(event.at).toISOString()}  ${event.type}  ${fields.join(' ')}\n`);
  }
}
