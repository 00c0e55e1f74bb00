/**
 * People who sign in: their statements, rows and store.
 */

import { isOperatorRole, type OperatorRole } from '../../core/scopes.ts';
import { type ColumnReader, CorruptRowError, integer, type Row, text, textOrNull } from '../rows.ts';
import { DuplicateError, type Stores, USER_PROFILE_TEXT_FIELDS, type UserRecord } from '../types.ts';
import type { Address, LocalizedNames } from '../users.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

/** A person's console role (`users.role`), read from `column`; null for none. */
export function operatorRole(row: Row, column = 'role'): OperatorRole | null {
  const value = textOrNull(row, column);
  if (value !== null && !isOperatorRole(value)) throw new CorruptRowError(column, 'an operator role', value);
  return value;
}

export function userFromRow(row: Row, read: ColumnReader): UserRecord {
  return {
    id: text(row, 'id'),
    username: text(row, 'username'),
    passwordHash: text(row, 'password_hash'),
    name: textOrNull(row, 'name'),
    email: textOrNull(row, 'email'),
    emailVerified: read.boolean(row, 'email_verified'),
    emailSelfAsserted: read.boolean(row, 'email_self_asserted'),
    givenName: textOrNull(row, 'given_name'),
    familyName: textOrNull(row, 'family_name'),
    locale: textOrNull(row, 'locale'),
    zoneinfo: textOrNull(row, 'zoneinfo'),
    picture: textOrNull(row, 'picture'),
    middleName: textOrNull(row, 'middle_name'),
    nickname: textOrNull(row, 'nickname'),
    profile: textOrNull(row, 'profile'),
    website: textOrNull(row, 'website'),
    gender: textOrNull(row, 'gender'),
    birthdate: textOrNull(row, 'birthdate'),
    phoneNumber: textOrNull(row, 'phone_number'),
    phoneNumberVerified: read.boolean(row, 'phone_number_verified'),
    address: row['address'] === null || row['address'] === undefined ? null : (read.object(row, 'address') as Address),
    // Null in rows from before version 20.
    localizedNames: row['localized_names'] === null || row['localized_names'] === undefined ? {} : (read.object(row, 'localized_names') as LocalizedNames),
    disabled: read.boolean(row, 'disabled'),
    role: operatorRole(row),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function usersStatements(d: Dialect) {
  return {
    insertUser: `
      INSERT INTO users (id, username, password_hash, name, email, email_verified, email_self_asserted, given_name, family_name, locale, zoneinfo, picture,
                         middle_name, nickname, profile, website, gender, birthdate, phone_number, phone_number_verified, address,
                         localized_names, disabled, role, created_at, updated_at)
      VALUES (:id, :username, :passwordHash, :name, :email, :emailVerified, :emailSelfAsserted, :givenName, :familyName, :locale, :zoneinfo, :picture,
              :middleName, :nickname, :profile, :website, :gender, :birthdate, :phoneNumber, :phoneNumberVerified, :address,
              :localizedNames, :disabled, :role, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getUser: 'SELECT * FROM users WHERE id = :id',
    getUserByUsername: 'SELECT * FROM users WHERE username = :username',
    // The accounts an address belongs to (recovery by e-mail), through users_email.
    getUsersByEmail: 'SELECT * FROM users WHERE lower(email) = lower(:email) ORDER BY created_at, id LIMIT 10',
    listUsers: 'SELECT * FROM users ORDER BY created_at, id',
    setUserDisabled: 'UPDATE users SET disabled = :disabled WHERE id = :id',
    setUserRole: 'UPDATE users SET role = :role WHERE id = :id',
    touchUser: 'UPDATE users SET updated_at = :now WHERE id = :id AND updated_at = :expected',
    // A field not given keeps its value: CASE on a flag, since null is a value to set. The
    // right-hand sides read the row as it was: email_self_asserted compares the old address.
    updateUser: `
      UPDATE users SET email_self_asserted = CASE
                         WHEN :setEmailVerified = 1 AND :emailVerified THEN FALSE
                         WHEN :setEmail = 1 AND lower(coalesce(CAST(:email AS TEXT), '')) <> lower(coalesce(email, '')) THEN FALSE
                         ELSE email_self_asserted END,
                       name = CASE WHEN :setName = 1 THEN CAST(:name AS TEXT) ELSE name END,
                       given_name = CASE WHEN :setGivenName = 1 THEN CAST(:givenName AS TEXT) ELSE given_name END,
                       family_name = CASE WHEN :setFamilyName = 1 THEN CAST(:familyName AS TEXT) ELSE family_name END,
                       email = CASE WHEN :setEmail = 1 THEN CAST(:email AS TEXT) ELSE email END,
                       email_verified = CASE WHEN :setEmailVerified = 1 THEN :emailVerified ELSE email_verified END,
                       locale = CASE WHEN :setLocale = 1 THEN CAST(:locale AS TEXT) ELSE locale END,
                       zoneinfo = CASE WHEN :setZoneinfo = 1 THEN CAST(:zoneinfo AS TEXT) ELSE zoneinfo END,
                       picture = CASE WHEN :setPicture = 1 THEN CAST(:picture AS TEXT) ELSE picture END,
                       middle_name = CASE WHEN :setMiddleName = 1 THEN CAST(:middleName AS TEXT) ELSE middle_name END,
                       nickname = CASE WHEN :setNickname = 1 THEN CAST(:nickname AS TEXT) ELSE nickname END,
                       profile = CASE WHEN :setProfile = 1 THEN CAST(:profile AS TEXT) ELSE profile END,
                       website = CASE WHEN :setWebsite = 1 THEN CAST(:website AS TEXT) ELSE website END,
                       gender = CASE WHEN :setGender = 1 THEN CAST(:gender AS TEXT) ELSE gender END,
                       birthdate = CASE WHEN :setBirthdate = 1 THEN CAST(:birthdate AS TEXT) ELSE birthdate END,
                       phone_number = CASE WHEN :setPhoneNumber = 1 THEN CAST(:phoneNumber AS TEXT) ELSE phone_number END,
                       phone_number_verified = CASE WHEN :setPhoneNumberVerified = 1 THEN :phoneNumberVerified ELSE phone_number_verified END,
                       address = CASE WHEN :setAddress = 1 THEN :address ELSE address END,
                       localized_names = CASE WHEN :setLocalizedNames = 1 THEN :localizedNames ELSE localized_names END,
                       updated_at = ${d.bigint(':now')}
      WHERE id = :id`,
    setUserPassword: 'UPDATE users SET password_hash = :passwordHash WHERE id = :id',
    removeUser: 'DELETE FROM users WHERE id = :id',
    clearedEmails: `
      SELECT c.user_id, u.username, c.email, c.email_verified, k.username AS kept_by, c.cleared_at
      FROM cleared_emails c JOIN users u ON u.id = c.user_id LEFT JOIN users k ON k.id = c.kept_by
      WHERE u.email IS NULL AND u.updated_at <= c.cleared_at ORDER BY c.cleared_at, u.created_at, u.id`,
    renameUser: `
      UPDATE users SET username = :username
      WHERE id = :id AND NOT EXISTS (SELECT 1 FROM users other WHERE other.username = :username AND other.id <> :id)`,
  };
}

export function usersStores(d: Dialect, q: Runner<keyof ReturnType<typeof usersStatements>>): Pick<Stores, 'users'> {
  const { read, flag } = d;
  const { first, every, changedAny } = queries(q);
  const user = (row: Row) => userFromRow(row, read);
  return {
    users: {
      async create(record) {
        const inserted = await changedAny('insertUser', {
          ...record,
          emailVerified: flag(record.emailVerified),
          emailSelfAsserted: flag(record.emailSelfAsserted),
          phoneNumberVerified: flag(record.phoneNumberVerified),
          address: record.address === null ? null : JSON.stringify(record.address),
          disabled: flag(record.disabled),
          localizedNames: JSON.stringify(record.localizedNames),
        });
        if (inserted) return;
        // One statement decided; which of the two unique values it refused is read after.
        if ((await q.one('getUserByUsername', { username: record.username })) !== undefined)
          throw new DuplicateError(`user ${JSON.stringify(record.username)}`, { field: 'username' });
        throw new DuplicateError('a user with this e-mail address', { field: 'email' });
      },
      get: (id) => first('getUser', { id }, user),
      findByUsername: (username) => first('getUserByUsername', { username }, user),
      findByEmail: (email) => every('getUsersByEmail', { email }, user),
      list: () => every('listUsers', {}, user),
      setDisabled: (id, disabled) => changedAny('setUserDisabled', { id, disabled: flag(disabled) }),
      setRole: (id, role) => changedAny('setUserRole', { id, role }),
      touch: (id, expected, now) => changedAny('touchUser', { id, expected, now }),
      update: async (id, changes, now) => {
        // Each field with a flag saying whether it is set, since null is a value to set.
        const fields = USER_PROFILE_TEXT_FIELDS.flatMap((field) => [
          [`set${field[0]!.toUpperCase()}${field.slice(1)}`, changes[field] === undefined ? 0 : 1],
          [field, changes[field] ?? null],
        ]);
        try {
          return await changedAny('updateUser', {
            id,
            now,
            ...Object.fromEntries(fields),
            setEmailVerified: changes.emailVerified === undefined ? 0 : 1,
            emailVerified: flag(changes.emailVerified ?? false),
            setPhoneNumberVerified: changes.phoneNumberVerified === undefined ? 0 : 1,
            phoneNumberVerified: flag(changes.phoneNumberVerified ?? false),
            setAddress: changes.address === undefined ? 0 : 1,
            address: changes.address === undefined || changes.address === null ? null : JSON.stringify(changes.address),
            setLocalizedNames: changes.localizedNames === undefined ? 0 : 1,
            localizedNames: JSON.stringify(changes.localizedNames ?? {}),
          });
        } catch (error) {
          // The e-mail address is the one unique value an update can take.
          if (error instanceof DuplicateError) throw new DuplicateError('a user with this e-mail address', { cause: error, field: 'email' });
          throw error;
        }
      },
      setPasswordHash: (id, passwordHash) => changedAny('setUserPassword', { id, passwordHash }),
      remove: (id) => changedAny('removeUser', { id }),
      rename: (id, username) => changedAny('renameUser', { id, username }),
      clearedEmails: () =>
        every('clearedEmails', {}, (row) => ({
          userId: text(row, 'user_id'),
          username: text(row, 'username'),
          email: text(row, 'email'),
          emailVerified: read.boolean(row, 'email_verified'),
          keptBy: textOrNull(row, 'kept_by'),
          clearedAt: integer(row, 'cleared_at'),
        })),
    },
  };
}
