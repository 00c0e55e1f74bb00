/** `tessera registration-token …`: arguments in, src/flows/manage/registration-tokens.ts, text out. */
import type { Config } from '../config/index.ts';
import { systemClock } from '../core/clock.ts';
import { createInitialAccessToken, initialAccessTokenJson, listInitialAccessTokens, removeInitialAccessToken } from '../flows/manage/registration-tokens.ts';
import { operatorDeps, parse, when, wholeNumber, withStore, type Io } from './common.ts';

async function tokenCreate(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { ttl: { type: 'string' }, 'max-uses': { type: 'string' }, json: { type: 'boolean' } });
  const ttl = wholeNumber(values.ttl, 9);
  const maxUses = wholeNumber(values['max-uses'], 9);
  const { token, record } = await withStore(config, (store) =>
    createInitialAccessToken(operatorDeps(config, store, io), {
      ...(ttl === undefined ? {} : { ttl_seconds: ttl }),
      ...(maxUses === undefined ? {} : { max_uses: maxUses }),
    }),
  );
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...initialAccessTokenJson(record), token })}\n`);
    return;
  }
  io.stdout(
    `Initial access token ${record.id}:\n  ${token}\nIt registers ${record.maxUses === null ? 'any number of clients' : `at most ${record.maxUses} client${record.maxUses === 1 ? '' : 's'}`} until ${when(record.expiresAt)}:\n  POST ${config.issuer}/oauth/register with Authorization: Bearer <token>\nIt is shown only now; Tessera keeps only its hash.${config.registration.policy === 'off' ? '\nRegistration is off: set TESSERA_REGISTRATION=token for the server to take it.' : ''}\n`,
  );
}

async function tokenList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const tokens = await withStore(config, (store) => listInitialAccessTokens({ store, clock: systemClock }));
  if (values.json) {
    io.stdout(`${JSON.stringify(tokens.map(initialAccessTokenJson))}\n`);
    return;
  }
  if (tokens.length === 0) io.stdout('No registration tokens that have not expired.\n');
  for (const token of tokens)
    io.stdout(`${token.id}  used ${token.uses}${token.maxUses === null ? '' : ` of ${token.maxUses}`}  expires ${when(token.expiresAt)}\n`);
}

async function tokenRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeInitialAccessToken(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed registration token ${positionals[0]!}: it registers nothing more.\n`);
}

export const REGISTRATION_TOKEN_COMMANDS = {
  'registration-token create': tokenCreate,
  'registration-token list': tokenList,
  'registration-token remove': tokenRemove,
};
