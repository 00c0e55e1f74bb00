/**
 * Sign-ups waiting for their e-mail link (`../sign-ups.ts`): statements, rows and store.
 */
import { type ColumnReader, integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { SignUpPasskey, SignUpRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

function signUpFromRow(row: Row, read: ColumnReader): SignUpRecord {
  return {
    tokenHash: text(row, 'token_hash'),
    userId: textOrNull(row, 'user_id'),
    username: text(row, 'username'),
    name: textOrNull(row, 'name'),
    email: text(row, 'email'),
    passwordHash: text(row, 'password_hash'),
    passkey: row['passkey'] === null || row['passkey'] === undefined ? null : (read.object(row, 'passkey') as unknown as SignUpPasskey),
    locale: textOrNull(row, 'locale'),
    returnTo: text(row, 'return_to'),
    browser: textOrNull(row, 'browser'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
  };
}

export function signUpsStatements(d: Dialect) {
  return {
    insertSignUp: `
      INSERT INTO sign_ups (token_hash, user_id, username, name, email, password_hash, passkey, locale, return_to, browser, created_at, expires_at, used_at)
      VALUES (:tokenHash, :userId, :username, :name, :email, :passwordHash, :passkey, :locale, :returnTo, :browser, :createdAt, :expiresAt, :usedAt)`,
    getSignUp: 'SELECT * FROM sign_ups WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumeSignUp: `
      UPDATE sign_ups SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    purgeSignUps: d.purge('sign_ups', 'token_hash', 'expires_at < :before'),
  };
}

export function signUpsStores(d: Dialect, q: Runner<keyof ReturnType<typeof signUpsStatements>>): Pick<Stores, 'signUps'> {
  const { first, write } = queries(q);
  const row = (found: Row) => signUpFromRow(found, d.read);
  return {
    signUps: {
      create: (signUp) => write('insertSignUp', { ...signUp, passkey: signUp.passkey === null ? null : JSON.stringify(signUp.passkey) }),
      find: (tokenHash, now) => first('getSignUp', { tokenHash, now }, row),
      consume: (tokenHash, now) => first('consumeSignUp', { tokenHash, now }, row),
    },
  };
}
