/**
 * The issuer a command that prints or calls the server's URLs uses: with the
 * server on `PORT=43080` and the commands in a second terminal without it, `device-login`
 * called port 8080, `provider add` printed a redirect URI on 8080 and `user reset-link` a dead
 * link. The same settings the server reads come first (TESSERA_ISSUER, then PORT); without
 * either, the issuer the server last started on this SQLite database recorded beside it;
 * only then the default. The command says which it assumed and why, and warns when nothing
 * answers there as that issuer.
 */
import type { Config } from '../config/index.ts';
import { fetchFailure } from '../core/fetch-failure.ts';
import { recordedIssuer } from '../main.ts';
import type { Io } from './common.ts';

export interface AssumedIssuer {
  readonly issuer: string;
  /** Where it came from, as the command says it. */
  readonly because: string;
}

export function assumeIssuer(config: Config, env: Io['env']): AssumedIssuer {
  if (env['TESSERA_ISSUER']?.trim()) return { issuer: config.issuer, because: 'TESSERA_ISSUER' };
  if (env['PORT']?.trim()) return { issuer: config.issuer, because: `PORT=${config.port}` };
  const recorded = recordedIssuer(config.database);
  if (recorded) return { issuer: recorded.issuer, because: `recorded by the server last started on this database, in ${recorded.file}` };
  return { issuer: config.issuer, because: 'the default: neither TESSERA_ISSUER nor PORT is set, and no server has started on this database' };
}

/** How long the check that the server answers may hold a command up. */
const PROBE_MS = 2000;

/**
 * Null when a server answers at `issuer` as that issuer (its discovery document); otherwise
 * why not, in words.
 */
export async function probeIssuer(issuer: string, fetcher: typeof fetch = fetch): Promise<string | null> {
  try {
    const response = await fetcher(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(PROBE_MS), redirect: 'manual' });
    if (!response.ok) return `nothing answers at ${issuer} as an issuer (HTTP ${response.status} for its discovery document)`;
    const named = ((await response.json().catch(() => ({}))) as { issuer?: unknown }).issuer;
    return named === issuer ? null : `the server at ${issuer} says its issuer is ${typeof named === 'string' ? named : '(none)'}`;
  } catch (error) {
    return `nothing answers at ${issuer} (${fetchFailure(error)})`;
  }
}

/**
 * What a command that printed URLs on `assumed` writes on standard error after them: the
 * issuer and why, and a warning when no server answers there, with what to set.
 */
export async function reportIssuer(assumed: AssumedIssuer, io: Io, fetcher?: typeof fetch): Promise<void> {
  io.stderr(`tessera: issuer ${assumed.issuer} (${assumed.because})\n`);
  const problem = await probeIssuer(assumed.issuer, fetcher);
  if (problem !== null) {
    io.stderr(`tessera: warning: ${problem}; these URLs work once the server serves that issuer: set TESSERA_ISSUER (or PORT) here as the server has it\n`);
  }
}
