/**
 * The bounds a field table's rows state for lists and pairs (how many, and each one's length),
 * held by the operations themselves (checkBounds), so that `tessera` and the console meet them
 * as the admin API's schema does: past a bound, each operation refuses naming the field and the
 * bound, before it reads anything else of the input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../../test/helpers/flows.ts';
import { ManageError } from '../errors.ts';
import { createClient, updateClient } from '../clients.ts';
import { addProvider, updateProvider } from '../providers.ts';
import { addSamlSp, updateSamlSp } from '../saml-service-providers.ts';
import { CLIENT_FIELDS } from './clients.ts';
import type { FieldTable } from './field.ts';
import { PROVIDER_FIELDS } from './providers.ts';
import { SAML_SP_FIELDS } from './saml-service-providers.ts';

/** How `run` refused: `invalid:FIELD at most`, the bound's own refusal (a value past it may break other rules too, which come later). */
async function boundRefusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    if (!(error instanceof ManageError)) throw error;
    return `${error.kind}:${error.field} ${/: (each )?at most \d+/.test(error.message) ? 'at most' : error.message}`;
  }
}

/** For each list and pairs row of `table`: a value one past its count, and (for a list) one whose item is one past its length. */
function pastBounds(table: FieldTable): [string, string, unknown][] {
  return table.flatMap((row): [string, string, unknown][] => {
    const type = row.type;
    if (type.kind === 'list')
      return [
        [row.name, `${type.maxItems + 1} values`, Array.from({ length: type.maxItems + 1 }, (_, i) => `v${i}`)],
        [row.name, `a value of ${type.max + 1} characters`, ['v'.repeat(type.max + 1)]],
      ];
    if (type.kind === 'pairs') {
      const count = type.maxItems + 1;
      const members = type.members;
      const value =
        members === undefined
          ? Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']))
          : Array.from({ length: count }, (_, i) => ({ [members[0]]: `k${i}`, [members[1]]: 'v' }));
      return [[row.name, `${count} pairs`, value]];
    }
    return [];
  });
}

describe('the field tables’ bounds, held by the operations', () => {
  let world: FlowWorld;
  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  it('refuses a list or pairs past its row’s bounds in every operation that takes it, naming the field', async () => {
    const { client } = await createClient(world.manage, { client_name: 'Notes', redirect_uris: ['https://notes.example/cb'] });
    const providerDeps = { ...world.manage, secrets: world.secrets };
    const provider = await addProvider(providerDeps, { kind: 'github', name: 'Hub', client_id: 'id', client_secret: 'secret' });
    const sp = await addSamlSp(world.manage, { entity_id: 'https://wiki.example.com', acs_urls: ['https://wiki.example.com/acs'] });
    const operations: [string, FieldTable, (input: Record<string, unknown>) => Promise<unknown>][] = [
      ['createClient', CLIENT_FIELDS, (input) => createClient(world.manage, { client_name: 'Bounded', ...input })],
      ['updateClient', CLIENT_FIELDS, (input) => updateClient(world.manage, client.id, input)],
      ['addProvider', PROVIDER_FIELDS, (input) => addProvider(providerDeps, { kind: 'oidc', name: 'Bounded', ...input })],
      ['updateProvider', PROVIDER_FIELDS, (input) => updateProvider(providerDeps, provider.id, input)],
      ['addSamlSp', SAML_SP_FIELDS, (input) => addSamlSp(world.manage, { entity_id: 'https://bounded.example.com', ...input })],
      ['updateSamlSp', SAML_SP_FIELDS, (input) => updateSamlSp(world.manage, sp.id, input)],
    ];
    let checked = 0;
    for (const [operation, table, run] of operations) {
      for (const [name, what, value] of pastBounds(table)) {
        assert.equal(await boundRefusal(() => run({ [name]: value })), `invalid:${name} at most`, `${operation}: ${name} with ${what}`);
        checked += 1;
      }
    }
    // Every list and pairs row of the three tables, in both operations.
    assert.ok(checked >= 30, `${checked} cases`);
  });

  it('takes a list at its bound', async () => {
    const redirectUris = Array.from({ length: 50 }, (_, i) => `https://notes.example/cb/${i}`);
    const { client } = await createClient(world.manage, { client_name: 'Fifty', redirect_uris: redirectUris });
    assert.equal(client.redirectUris.length, 50);
    assert.equal(
      await outcome(() => updateClient(world.manage, client.id, { redirect_uris: [...redirectUris, 'https://notes.example/cb/50'] })),
      'invalid:redirect_uris',
    );
  });
});
