/**
 * SQL that both stores run word for word, kept here so that the rules it encodes are
 * written once. Each store passes its own placeholder syntax.
 */

/** Rows deleted per statement by `purgeExpired`: small enough that no statement holds its lock for long. */
export const PURGE_BATCH_SIZE = 1000;

/**
 * The interval stops growing here: no device code lives longer (the seed's ten minutes), so
 * a larger interval would change no answer, and the bound keeps `poll_interval * 1000` far
 * inside PostgreSQL's 32-bit integer however often a device is told to slow down.
 */
export const MAX_POLL_INTERVAL_SECONDS = 600;

/**
 * What one device poll finds (`DevicePollOutcome`), as an SQL expression over the row as
 * it was before the poll, in the documented order. RFC 8628 §3.5: "expired_token: The
 * device_code has expired"; "slow_down: ... the interval MUST be increased by 5 seconds
 * for this and all subsequent requests". A first poll (no `last_polled_at`) is never too
 * soon.
 */
function devicePollOutcome(now: string): string {
  return `(CASE
    WHEN expires_at <= ${now} THEN 'expired'
    WHEN status = 'consumed' THEN 'consumed'
    WHEN status = 'denied' THEN 'denied'
    WHEN last_polled_at IS NOT NULL AND ${now} - last_polled_at < poll_interval * 1000 THEN 'slow_down'
    WHEN status = 'approved' THEN 'issue'
    ELSE 'pending'
  END)`;
}

/**
 * The SET list of the device poll's one UPDATE. Every expression in a SET list sees the
 * row as it was before the UPDATE (in SQLite and PostgreSQL alike), so the outcome is
 * computed once from the old row and drives the other columns: `slow_down` grows the
 * interval, `issue` consumes the record. Concurrent polls are serialised (SQLite's write
 * lock, PostgreSQL's row lock) and each sees the row its predecessor left: one `issue`,
 * then `consumed`.
 */
export function devicePollAssignments(now: string): string {
  const outcome = devicePollOutcome(now);
  return `last_outcome = ${outcome},
    poll_interval = CASE WHEN ${outcome} = 'slow_down' AND poll_interval < ${MAX_POLL_INTERVAL_SECONDS} THEN poll_interval + 5 ELSE poll_interval END,
    status = CASE ${outcome} WHEN 'issue' THEN 'consumed' ELSE status END,
    last_polled_at = ${now}`;
}
