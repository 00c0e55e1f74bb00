/**
 * The sign-in flood of issue 12: wrong-password posts to `/login` from several addresses
 * (X-Forwarded-For; the target trusts its loopback proxy), each address keeping a few in
 * flight, for as long as the flood runs. Every post has its own unknown username, so the
 * per-username limits never stop it: only what the server does about the cost of argon2id
 * (the decoy hash makes an unknown username cost as much as a known one) does. The
 * double-submit CSRF pair is the attacker's own, fetched once per address.
 */

export interface FloodSettings {
  /** Addresses the flood comes from. */
  readonly addresses: number;
  /** Posts each address keeps in flight. */
  readonly perAddress: number;
}

export interface FloodCounts {
  /** Answered 401: the password was checked (hashed). */
  checked: number;
  /** Answered 429: refused without hashing. */
  refused: number;
  /** Anything else (a failed connection included). */
  other: number;
}

export interface Flood {
  /** Stops sending and waits for the posts in flight to be answered. */
  stop(): Promise<FloodCounts>;
}

async function csrfPair(origin: string, ip: string): Promise<{ cookie: string; token: string }> {
  const response = await fetch(`${origin}/login`, { headers: { 'x-forwarded-for': ip } });
  const html = await response.text();
  const cookie = response.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.includes('csrf'));
  const token = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!cookie || !token) throw new Error(`no CSRF pair from ${origin}/login (${response.status})`);
  return { cookie, token };
}

export async function startFlood(origin: string, settings: FloodSettings): Promise<Flood> {
  const counts: FloodCounts = { checked: 0, refused: 0, other: 0 };
  let running = true;
  let serial = 0;
  const addresses = Array.from({ length: settings.addresses }, (_, i) => `198.18.${i >> 8}.${(i & 0xff) + 1}`);
  const pairs = await Promise.all(addresses.map((ip) => csrfPair(origin, ip)));
  const loop = async (ip: string, pair: { cookie: string; token: string }) => {
    while (running) {
      serial += 1;
      const body = new URLSearchParams({ csrf_token: pair.token, username: `flood-${serial}`, password: `guess-${serial}`, return_to: '/' });
      try {
        const response = await fetch(`${origin}/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pair.cookie, 'x-forwarded-for': ip },
          body: body.toString(),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        if (response.status === 401) counts.checked += 1;
        else if (response.status === 429) {
          counts.refused += 1;
          // "As fast as the limits allow": the flood waits as long as it is told (at most
          // 5 s), so the figure is what the limits let through, not how fast this driver
          // can be refused on a machine it shares with the server.
          const wait = Math.min(5, Math.max(1, Number(response.headers.get('retry-after')) || 1));
          await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        } else counts.other += 1;
      } catch {
        counts.other += 1;
      }
    }
  };
  const loops = addresses.flatMap((ip, i) => Array.from({ length: settings.perAddress }, () => loop(ip, pairs[i]!)));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}
