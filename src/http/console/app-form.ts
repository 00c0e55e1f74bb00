/**
 * The console's app form as the clients' field table has it (flows/manage/fields/clients.ts):
 * a registration's values, the values as posted, and the operation's input of those changed.
 */
import type { RawParams } from '../../core/protocol.ts';
import { clientJson, type ClientMetadata } from '../../flows/manage/clients.ts';
import { ManageError } from '../../flows/manage/errors.ts';
import { CLIENT_FIELDS } from '../../flows/manage/fields/clients.ts';
import { formValues, FormValueError, inputOf, postedValues, sameValue } from '../../flows/manage/fields/field.ts';
import type { ClientRecord } from '../../store/types.ts';
import type { AppFormValues } from '../../ui/console.ts';

/** The registration form of a stored client: its admin API JSON, through the table (fields/clients.ts). */
export const formOf = (client: ClientRecord): AppFormValues => formValues(CLIENT_FIELDS, clientJson(client, client.createdAt));

/** What a new registration's form starts with: `tessera client add`'s defaults. */
export const NEW_APP: AppFormValues = formValues(CLIENT_FIELDS, {
  token_endpoint_auth_method: 'client_secret_basic',
  scope: 'openid profile email',
  grant_types: ['authorization_code'],
  pkce: 'required',
});

/** The form as posted. */
export const postedForm = (form: RawParams): AppFormValues => postedValues(CLIENT_FIELDS, form);

/** Form values as the operation's input (RFC 7591 §2 names), only the fields in `names`. */
export function metadataOf(values: AppFormValues, names: readonly string[]): ClientMetadata {
  try {
    return inputOf(CLIENT_FIELDS, values, names) as ClientMetadata;
  } catch (error) {
    if (error instanceof FormValueError) throw new ManageError('invalid', [{ field: error.field }, `: ${error.message}`]);
    throw error;
  }
}

export const FORM_KEYS: readonly string[] = CLIENT_FIELDS.filter((field) => field.form !== null).map((field) => field.name);

export const same = sameValue;
