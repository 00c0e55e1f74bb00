/** `tessera user …`: arguments in, the operations of src/flows/manage/users.ts, text out. */
import type { Config } from '../config/index.ts';
import { normalizeUsername } from '../core/username.ts';
import { clearLockouts } from '../flows/manage/lockouts.ts';
import type { LocalizedNamesInput } from '../flows/profile.ts';
import type { LocalizableClaim } from '../store/types.ts';
import {
  createUser,
  findUser,
  listUsers,
  RECOVERY_CODE_COUNT,
  removeUser,
  resetLink,
  resetUserSecondFactor,
  setDisabled,
  setPassword,
  updateUser,
  userDetails,
  userDetailsJson,
  userJson,
  type UserChanges,
  type UserInput,
} from '../flows/manage/users.ts';
import { USER_FIELDS } from '../flows/manage/fields/users.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';
import { operatorDeps, parse, toldLine, UsageError, when, wholeNumber, withStore, type Command, type Io } from './common.ts';
import { lineText } from './text.ts';
import { inviteUser } from '../flows/manage/invitations.ts';
import { mailOutbox } from '../flows/mail/outbox.ts';
import { loadKeyEncryption } from '../tokens/key-encryption.ts';
import { secretBox } from '../tokens/secret-box.ts';

/** OIDC Core §5.2: `--name-in ja-Kana-JP="ヤマダ タロウ"`, repeatable; "" after = removes one. The table's localized_names. */
const LOCALIZED_OPTIONS = {
  'name-in': { type: 'string', multiple: true },
  'given-name-in': { type: 'string', multiple: true },
  'family-name-in': { type: 'string', multiple: true },
} as const;

const ADD_OPTIONS = { ...cliOptions(USER_FIELDS, 'create').options, ...LOCALIZED_OPTIONS, 'password-stdin': { type: 'boolean' } } as const;
const UPDATE_OPTIONS = { ...cliOptions(USER_FIELDS, 'update').options, ...LOCALIZED_OPTIONS } as const;

/** `--name-in TAG=NAME` and its given and family kin, as names by tag (the flow checks the tags). */
function localizedNamesInput(values: OptionValues): LocalizedNamesInput | undefined {
  const names: Record<string, Partial<Record<LocalizableClaim, string>>> = {};
  const options = [
    ['name-in', 'name'],
    ['given-name-in', 'given_name'],
    ['family-name-in', 'family_name'],
  ] as const;
  for (const [option, claim] of options) {
    for (const pair of (values[option] as readonly string[] | undefined) ?? []) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new UsageError(`--${option} ${pair}: give TAG=NAME, e.g. --${option} ja-Kana-JP="ヤマダ タロウ"`);
      (names[pair.slice(0, at)] ??= {})[claim] = pair.slice(at + 1);
    }
  }
  return Object.keys(names).length === 0 ? undefined : names;
}

/**
 * The account's fields the options give, by their protocol names (the table's options and
 * the names in other languages); an option left out changes nothing. `current`: the user as
 * the admin API gives them, whose address a member option changes.
 */
async function profileInput(
  operation: 'create' | 'update',
  values: OptionValues,
  current: Readonly<Record<string, unknown>> = {},
): Promise<UserChanges & UserInput> {
  const localized = localizedNamesInput(values);
  return { ...(await inputFromOptions(USER_FIELDS, operation, values, current)), ...(localized === undefined ? {} : { localized_names: localized }) };
}

/** The password from standard input, one trailing newline dropped. */
async function readPassword(values: { 'password-stdin'?: boolean | undefined }, io: Io): Promise<string> {
  if (!values['password-stdin']) throw new UsageError('--password-stdin is required: pass the password on standard input, never as an argument');
  return (await io.stdin()).replace(/\r?\n$/, '');
}

async function userAdd(config: Config, args: string[], io: Io): Promise<void> {
  const values = parse(args, ADD_OPTIONS).values as OptionValues;
  if (typeof values['username'] !== 'string' || !normalizeUsername(values['username'])) throw new UsageError('--username is required');
  const profile = await profileInput('create', values);
  const password = await readPassword({ 'password-stdin': values['password-stdin'] === true }, io);
  const user = await withStore(config, (store) => createUser(operatorDeps(config, store, io), { ...profile, password }));
  io.stdout(`Created user ${user.username} (sub ${user.id}).\n`);
}

async function userList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const users = await withStore(config, (store) => listUsers({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(users.map(userJson))}\n`);
    return;
  }
  if (users.length === 0) io.stdout('No users.\n');
  for (const user of users) {
    // Each value on its own line (cli/text.ts): a name from anywhere cannot start another.
    io.stdout(
      `${lineText(user.username)}${user.disabled ? '  (disabled)' : ''}${user.role ? `  (console: ${user.role})` : ''}\n  sub: ${lineText(user.id)}\n${user.name ? `  name: ${lineText(user.name)}\n` : ''}${user.email ? `  email: ${lineText(user.email)}\n` : ''}`,
    );
  }
}

async function userShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const details = await withStore(config, (store) => userDetails({ store }, positionals[0]!));
  if (values.json) {
    io.stdout(`${JSON.stringify(userDetailsJson(details))}\n`);
    return;
  }
  const { user, grants, lastSignIn, passkeys, totp, identities } = details;
  // Each value on its own line (cli/text.ts): what a provider, a person or an older version stored cannot start another.
  const shown = (value: string | null) => (value === null ? '-' : lineText(value));
  const identityLines = identities.map(
    (identity) =>
      `\n    ${shown(identity.providerName ?? 'a removed provider')} (${shown(identity.providerId)}): ${shown(identity.label ?? identity.subject)}, linked ${when(identity.linkedAt)}, last used ${when(identity.lastUsedAt)}${identity.groups.length > 0 ? `, groups ${identity.groups.map(shown).join(' ')}` : ''}`,
  );
  const passkeyLines = passkeys.map(
    (passkey) =>
      `\n    ${shown(passkey.name)} (${passkey.deviceType === 'multiDevice' ? 'synced' : 'this device only'}): added ${when(passkey.createdAt)}, last used ${when(passkey.lastUsedAt)}`,
  );
  io.stdout(`${shown(user.username)}${user.disabled ? '  (disabled)' : ''}
  sub: ${shown(user.id)}
  name: ${shown(user.name)}
  given name: ${shown(user.givenName)}
  family name: ${shown(user.familyName)}
  email: ${shown(user.email)}${user.email === null ? '' : user.emailVerified ? ' (verified)' : ' (not verified)'}
  locale: ${shown(user.locale)}
  time zone: ${shown(user.zoneinfo)}
  middle name: ${shown(user.middleName)}
  nickname: ${shown(user.nickname)}
  picture: ${shown(user.picture)}
  profile page: ${shown(user.profile)}
  website: ${shown(user.website)}
  gender: ${shown(user.gender)}
  birthdate: ${shown(user.birthdate)}
  phone: ${shown(user.phoneNumber)}${user.phoneNumber === null ? '' : user.phoneNumberVerified ? ' (verified)' : ' (not verified)'}
  address: ${
    user.address === null
      ? '-'
      : Object.values(user.address)
          .map((part) => shown(part.replaceAll('\n', ', ')))
          .join(', ')
  }
  console role: ${user.role ?? 'none'}
  created: ${when(user.createdAt)}
  profile updated: ${when(user.updatedAt)}
  approvals not revoked: ${grants}
  last sign-in: ${lastSignIn === null ? 'none recorded' : `${when(lastSignIn.at)}${lastSignIn.ip ? ` from ${lastSignIn.ip}` : ''}`}
  passkeys: ${passkeys.length === 0 ? 'none' : passkeys.length}${passkeyLines.join('')}
  one-time codes: ${totp.enabled ? `on, ${totp.recoveryCodesLeft} of ${RECOVERY_CODE_COUNT} recovery codes left` : 'off'}
  linked identities: ${identities.length === 0 ? 'none' : identities.length}${identityLines.join('')}
`);
}

function userSetDisabled(disabled: boolean): Command {
  return async (config, args, io) => {
    const { positionals } = parse(args, {}, 1);
    const name = positionals[0]!;
    const told = await withStore(config, (store) => setDisabled(operatorDeps(config, store, io), name, disabled));
    if (told === null) io.stdout(`${name} was already ${disabled ? 'disabled' : 'enabled'}.\n`);
    else io.stdout(disabled ? `Disabled ${name}: their sessions have ended and their tokens no longer work.\n${toldLine(told)}` : `Enabled ${name}.\n`);
  };
}

async function userRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const told = await withStore(config, (store) => removeUser(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed ${positionals[0]!} and everything issued to them.\n${toldLine(told)}`);
}

async function userUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const parsed = parse(args, UPDATE_OPTIONS, 1);
  const [values, positionals] = [parsed.values as OptionValues, parsed.positionals];
  const role = values['role'];
  const user = await withStore(config, async (store) => {
    const deps = operatorDeps(config, store, io);
    return updateUser(deps, positionals[0]!, await profileInput('update', values, userJson(await findUser(deps, positionals[0]!))));
  });
  io.stdout(
    `Updated ${user.username}.${role === undefined ? '' : user.role === null ? ' They have no console role.' : ` Their console role: ${user.role}.`}\n`,
  );
}

async function userSetPassword(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { 'password-stdin': { type: 'boolean' } }, 1);
  const password = await readPassword(values, io);
  const told = await withStore(config, (store) => setPassword(operatorDeps(config, store, io), positionals[0]!, password));
  io.stdout(`Set the password of ${positionals[0]!}; their sessions have ended.\n${toldLine(told)}`);
}

async function userResetLink(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { ttl: { type: 'string' } }, 1);
  const link = await withStore(config, (store) => resetLink(operatorDeps(config, store, io), positionals[0]!, wholeNumber(values.ttl)));
  io.stdout(`${link.url}\nGive this link to ${positionals[0]!} only: it sets their password once, until ${when(link.expiresAt)}.\n`);
}

async function userResetSecondFactor(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const username = normalizeUsername(positionals[0]!);
  const reset = await withStore(config, (store) => resetUserSecondFactor(operatorDeps(config, store, io), username));
  const passkeys = reset.passkeys === 1 ? '1 passkey' : `${reset.passkeys} passkeys`;
  io.stdout(
    `Removed ${passkeys}${reset.totp ? ', one-time codes and recovery codes' : ''} of ${username}. They sign in with their password until they set up a new one.\n`,
  );
}

/**
 * Lifts a person's lockouts: wrong passwords counted against their username (from every
 * address) and wrong one-time codes, so their next attempt starts afresh (nothing
 * lifted them, and the lockout page sent people to the operator).
 */
async function userUnlock(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const cleared = await withStore(config, async (store) => {
    const deps = operatorDeps(config, store, io);
    const user = await findUser(deps, positionals[0]!);
    return clearLockouts(deps, { username: user.username });
  });
  const locked = cleared.filter((entry) => entry.locked).length;
  io.stdout(
    cleared.length === 0
      ? `${normalizeUsername(positionals[0]!)} was not locked out; nothing counted against them.\n`
      : `Unlocked ${normalizeUsername(positionals[0]!)}: cleared ${cleared.length} counter${cleared.length === 1 ? '' : 's'} of wrong passwords and codes (${locked} refusing sign-in).\n`,
  );
}

/**
 * Invites someone by e-mail address: the link is mailed when a mail server is set (the outbox
 * is sealed under the key encryption key, as the server's), and printed either way.
 */
async function userInvite(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(
    args,
    {
      email: { type: 'string' },
      role: { type: 'string' },
      org: { type: 'string' },
      client: { type: 'string' },
      ttl: { type: 'string' },
      json: { type: 'boolean' },
    },
    0,
  );
  if (values.email === undefined) throw new UsageError('user invite: --email is required');
  const invitation = await withStore(config, (store) => {
    const deps = operatorDeps(config, store, io);
    const mail = config.mail.smtpUrl === null ? undefined : mailOutbox(secretBox(loadKeyEncryption(config.keyEncryption)), () => Date.now());
    return inviteUser(mail === undefined ? deps : { ...deps, mail }, {
      email: values.email!,
      // With --org, --role is the person's role there (owner, admin, member), not a console role.
      ...(values.org === undefined ? { role: values.role ?? null } : { organization: values.org, organizationRole: values.role ?? null }),
      clientId: values.client ?? null,
      ...(values.ttl === undefined ? {} : { ttlSeconds: wholeNumber(values.ttl) }),
    });
  });
  if (values.json) {
    io.stdout(
      `${JSON.stringify({ url: invitation.url, email: invitation.email, expires_at: new Date(invitation.expiresAt).toISOString(), mailed: invitation.mailed })}\n`,
    );
    return;
  }
  const sent = invitation.mailed ? `Mailed to ${invitation.email}.` : `Give this link to ${invitation.email} only (no mail server is set: TESSERA_SMTP_URL).`;
  io.stdout(`${invitation.url}\n${sent} It makes one account with that address, until ${when(invitation.expiresAt)}.\n`);
}

export const USER_COMMANDS = {
  'user add': userAdd,
  'user list': userList,
  'user show': userShow,
  'user disable': userSetDisabled(true),
  'user enable': userSetDisabled(false),
  'user remove': userRemove,
  'user update': userUpdate,
  'user set-password': userSetPassword,
  'user reset-link': userResetLink,
  'user invite': userInvite,
  'user reset-second-factor': userResetSecondFactor,
  'user unlock': userUnlock,
};
