/**
 * Sign-ups waiting for their e-mail link (`../sign-ups.ts`): statements, rows and store.
 */
import { integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { SignUpRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

function signUpFromRow(row: Row): SignUpRecord {
  return {
    tokenHash: text(row, 'token_hash'),
    userId: textOrNull(row, 'user_id'),
    username: text(row, 'username'),
    name: textOrNull(row, 'name'),
    email: text(row, 'email'),
    passwordHash: text(row, 'password_hash'),
    locale: textOrNull(row, 'locale'),
    returnTo: text(row, 'return_to'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
  };
}

export function signUpsStatements(d: Dialect) {
  return {
    insertSignUp: `
      INSERT INTO sign_ups (token_hash, user_id, username, name, email, password_hash, locale, return_to, created_at, expires_at, used_at)
      VALUES (:tokenHash, :userId, :username, :name, :email, :passwordHash, :locale, :returnTo, :createdAt, :expiresAt, :usedAt)`,
    getSignUp: 'SELECT * FROM sign_ups WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumeSignUp: `
      UPDATE sign_ups SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    purgeSignUps: d.purge('sign_ups', 'token_hash', 'expires_at < :before'),
  };
}

export function signUpsStores(_d: Dialect, q: Runner<keyof ReturnType<typeof signUpsStatements>>): Pick<Stores, 'signUps'> {
  const { first, write } = queries(q);
  return {
    signUps: {
      create: (signUp) => write('insertSignUp', { ...signUp }),
      find: (tokenHash, now) => first('getSignUp', { tokenHash, now }, signUpFromRow),
      consume: (tokenHash, now) => first('consumeSignUp', { tokenHash, now }, signUpFromRow),
    },
  };
}
