/**
 * The console's profile form as the users' field table has it (flows/manage/fields/users.ts):
 * a person's values, the values as posted, and the operation's input of those changed.
 */
import type { RawParams } from '../../core/protocol.ts';
import { ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, FormValueError, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { USER_FIELDS } from '../../flows/manage/fields/users.ts';
import { userJson, type UserChanges } from '../../flows/manage/users.ts';
import type { UserRecord } from '../../store/types.ts';

export const PROFILE_KEYS: readonly string[] = formKeys(USER_FIELDS);

/** The profile form of a stored user: their admin API JSON, through the table. */
export const profileOf = (user: UserRecord): FormValues => formValues(USER_FIELDS, userJson(user));

export const postedProfile = (form: RawParams): FormValues => postedValues(USER_FIELDS, form);

/** The form keys whose values differ between `a` and `b`. */
export const changedKeys = (a: FormValues, b: FormValues): string[] => PROFILE_KEYS.filter((key) => !sameValue(a[key], b[key]));

/** Form values as the operation's input (OIDC Core §5.1 names), only the fields in `names`. */
export function changesOf(values: FormValues, names: readonly string[], before?: FormValues): UserChanges {
  try {
    return inputOf(USER_FIELDS, values, names, before) as UserChanges;
  } catch (error) {
    if (error instanceof FormValueError) throw new ManageError('invalid', [{ field: error.field }, `: ${error.message}`]);
    throw error;
  }
}
