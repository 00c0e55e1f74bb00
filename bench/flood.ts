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

let accountFloods = 0;

/**
 * The account-page flood of issue 34: a signed-in session posting wrong current passwords to
 * `/account/password`, from `addresses` addresses (one session each), each keeping
 * `perAddress` posts in flight. Before issue 34 each was checked on libuv's thread pool, the
 * one that signs tokens, and nothing limited them; now they go through the password queue
 * and the sign-in limits, so most are answered 429 at once.
 */
export async function startAccountFlood(origin: string, settings: FloodSettings, owner: { readonly username: string; readonly password: string }): Promise<Flood> {
  const counts: FloodCounts = { checked: 0, refused: 0, other: 0 };
  let running = true;
  let serial = 0;
  // Each flood (warm-up, then every timed run) signs in from addresses of its own: the wrong
  // current passwords of the one before count against the owner's username from its
  // addresses (issue 34), which then refuse the owner's sign-in for the rest of the window.
  const round = accountFloods++;
  const first = round * settings.addresses + 1;
  const addresses = Array.from({ length: settings.addresses }, (_, i) => `198.19.${(first + i) >> 8}.${(first + i) & 0xff}`);
  const sessions = await Promise.all(
    addresses.map(async (ip) => {
      const pair = await csrfPair(origin, ip);
      const body = new URLSearchParams({ csrf_token: pair.token, username: owner.username, password: owner.password, return_to: '/account' });
      const response = await fetch(`${origin}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pair.cookie, 'x-forwarded-for': ip },
        body: body.toString(),
        redirect: 'manual',
      });
      await response.arrayBuffer();
      const session = response.headers.getSetCookie().map((line) => line.split(';')[0]!).find((cookie) => cookie.includes('tessera_session='));
      if (response.status !== 303 || !session) throw new Error(`the flood owner could not sign in at ${origin}/login (${response.status})`);
      return { ip, token: pair.token, cookie: `${pair.cookie}; ${session}` };
    }),
  );
  const loop = async (session: { ip: string; token: string; cookie: string }) => {
    while (running) {
      serial += 1;
      const body = new URLSearchParams({ csrf_token: session.token, current_password: `guess-${serial}`, new_password: 'never set by the flood' });
      try {
        const response = await fetch(`${origin}/account/password`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie, 'x-forwarded-for': session.ip },
          body: body.toString(),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        if (response.status === 400) counts.checked += 1;
        else if (response.status === 429) {
          counts.refused += 1;
          const wait = Math.min(5, Math.max(1, Number(response.headers.get('retry-after')) || 1));
          await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        } else counts.other += 1;
      } catch {
        counts.other += 1;
      }
    }
  };
  const loops = sessions.flatMap((session) => Array.from({ length: settings.perAddress }, () => loop(session)));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}
