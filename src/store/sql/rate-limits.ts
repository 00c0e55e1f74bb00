/**
 * Rate-limit windows: their statements and store.
 */

import { integer, type Row, text } from '../rows.ts';
import type { Stores, WindowCount } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

/** The statements, by name, in `d`'s SQL. */
export function rateLimitsStatements(d: Dialect) {
  return {
    // A fixed window that starts at the first hit after the previous window ended.
    hitRateLimit: `
      INSERT INTO rate_limits (key, hits, window_ends_at) VALUES (:key, 1, :windowEndsAt)
      ON CONFLICT (key) DO UPDATE SET
        hits = CASE WHEN rate_limits.window_ends_at <= :now THEN 1 ELSE rate_limits.hits + 1 END,
        window_ends_at = CASE WHEN rate_limits.window_ends_at <= :now THEN excluded.window_ends_at
                              ELSE rate_limits.window_ends_at END
      RETURNING hits, window_ends_at`,
    countRateLimit: 'SELECT hits FROM rate_limits WHERE key = :key AND window_ends_at > :now',
    getRateLimit: 'SELECT hits, window_ends_at FROM rate_limits WHERE key = :key AND window_ends_at > :now',
    // Matched by the window the hit landed in (its end), not by the time: a release that comes
    // after the window rolled over must leave the next window's count alone.
    releaseRateLimit: 'UPDATE rate_limits SET hits = hits - 1 WHERE key = :key AND window_ends_at = :windowEndsAt AND hits > 0',
    // A prefix compared as a substring, not with LIKE: keys hold usernames, where _ and % are literal.
    listOpenRateLimits: `
      SELECT key, hits, window_ends_at FROM rate_limits
      WHERE substr(key, 1, length(:prefix)) = :prefix AND window_ends_at > :now AND hits > 0
      ORDER BY window_ends_at DESC, key
      LIMIT :limit`,
    removeRateLimit: 'DELETE FROM rate_limits WHERE key = :key',
    purgeRateLimits: d.purge('rate_limits', 'key', 'window_ends_at < :before'),
  };
}

export function rateLimitsStores(_d: Dialect, q: Runner<keyof ReturnType<typeof rateLimitsStatements>>): Pick<Stores, 'rateLimits'> {
  const { first, every, changedAny, write } = queries(q);
  return {
    rateLimits: {
      async hit(key, windowMs, now) {
        const row = await q.one('hitRateLimit', { key, now, windowEndsAt: now + windowMs });
        if (!row) throw new Error('rate limit upsert returned no row');
        return windowCount(row);
      },
      // The stored window carries its own end, so the window length is not needed to read it.
      count: async (key, _windowMs, now) => (await first('countRateLimit', { key, now }, (row) => integer(row, 'hits'))) ?? 0,
      window: (key, now) => first('getRateLimit', { key, now }, windowCount),
      release: (key, windowEndsAt) => write('releaseRateLimit', { key, windowEndsAt }),
      listOpen: (prefix, now, limit) => every('listOpenRateLimits', { prefix, now, limit }, (row) => ({ key: text(row, 'key'), ...windowCount(row) })),
      remove: (key) => changedAny('removeRateLimit', { key }),
    },
  };
}

function windowCount(row: Row): WindowCount {
  return { hits: integer(row, 'hits'), endsAt: integer(row, 'window_ends_at') };
}
