/**
 * "Forgot password?": a reset link sent to the account's e-mail address, through the outbox.
 *
 * The answer never says whether the address has an account: the page is the same, and the
 * request does the same work either way (the budgets, one lookup, one transaction with its
 * event; the message is sent later, by the dispatcher), so its timing says no more than its
 * words. Each request is charged to its network address and to the e-mail address it names,
 * whether or not that address has an account, so that neither a flood from one place nor a
 * flood at one person's inbox gets through; a refusal is the same for every address too.
 */
import type { Locale } from '../config/locales.ts';
import { hashSecret } from '../core/crypto.ts';
import { countedAddress } from '../core/networks.ts';
import { Attempt, isRefusal } from './attempts.ts';
import { transactionWithEvents } from './events.ts';
import { mailAddress } from './mail/outbox.ts';
import { issueResetLink, mailLocale, type AccountDeps } from './users.ts';

const HOUR_MS = 60 * 60_000;

export const RECOVERY_KEYS = {
  address: 'recovery:ip:',
  /** The hash of the address, lower-cased: the counter names no one. */
  email: 'recovery:email:',
} as const;

/**
 * Counts one mailed link (a recovery link, an e-mail change's) against the address asking
 * and the address it goes to, per hour (TESSERA_RECOVERY_PER_ADDRESS, _PER_EMAIL): the
 * reservation, or the refusal with its wait. Every request stays counted: there is no
 * success to give the place back for.
 */
export function reserveMailedLink(deps: Pick<AccountDeps, 'store' | 'config' | 'clock'>, ip: string, email: string) {
  const settings = deps.config.recovery;
  return Attempt.reserve(
    deps.store.rateLimits,
    [
      { key: `${RECOVERY_KEYS.address}${countedAddress(ip)}`, limit: settings.perAddressPerHour },
      { key: `${RECOVERY_KEYS.email}${hashSecret(email.toLowerCase())}`, limit: settings.perEmailPerHour },
    ],
    HOUR_MS,
    deps.clock.now(),
  );
}

export type RecoveryResult =
  /** Sent if there was anyone to send it to; the page says no more. */
  | { readonly kind: 'sent'; readonly email: string }
  | { readonly kind: 'invalid' }
  | { readonly kind: 'limited'; readonly retryAfterSeconds: number }
  /** No mail server: recovery by e-mail is not offered. */
  | { readonly kind: 'unavailable' };

export async function requestRecovery(
  deps: AccountDeps,
  input: { readonly email: string; readonly ip: string; readonly locale: Locale },
): Promise<RecoveryResult> {
  const { mail } = deps;
  if (mail === undefined) return { kind: 'unavailable' };
  const email = mailAddress(input.email);
  if (email === null) return { kind: 'invalid' };
  const settings = deps.config.recovery;
  const attempt = await reserveMailedLink(deps, input.ip, email);
  if (isRefusal(attempt)) return { kind: 'limited', retryAfterSeconds: attempt.retryAfterSeconds };
  const accounts = (await deps.store.users.findByEmail(email)).filter((user) => !user.disabled);
  await transactionWithEvents(deps, async (tx, record) => {
    await record({ type: 'recovery.requested', detail: { accounts: accounts.length } });
    for (const user of accounts) {
      const link = await issueResetLink(deps, tx, record, user, settings.linkTtlSeconds, 'email');
      await mail.queue(tx, link.event, {
        kind: 'recovery',
        to: { address: user.email!, name: user.name ?? '' },
        locale: mailLocale(deps, user, input.locale),
        values: { username: user.username, link: link.url, expiresAt: link.expiresAt },
      });
    }
  });
  return { kind: 'sent', email };
}
