/**
 * The sign-in flood: wrong-password posts to `/login` from several addresses
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
  const cookie = response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .find((pair) => pair.includes('csrf'));
  const token = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!cookie || !token) throw new Error(`no CSRF pair from ${origin}/login (${response.status})`);
  return { cookie, token };
}

/** A form post of one flood: where, from which address, with which cookies and fields. */
interface FloodPost {
  readonly path: string;
  readonly ip: string;
  readonly cookie: string;
  readonly fields: (serial: number) => Record<string, string>;
}

/**
 * Keeps `perAddress` posts of each `FloodPost` in flight until stopped, counting answers
 * with `checkedStatus` as checked and 429 as refused.
 */
function runFlood(origin: string, posts: readonly FloodPost[], perAddress: number, checkedStatus: number): Flood {
  const counts: FloodCounts = { checked: 0, refused: 0, other: 0 };
  let running = true;
  let serial = 0;
  // Ends every Retry-After wait at once when the flood stops: the waits are up to 5 s each,
  // and the run that stops the flood would otherwise wait for the longest of them.
  const stopped = new AbortController();
  const loop = async (post: FloodPost) => {
    while (running) {
      serial += 1;
      try {
        const response = await fetch(`${origin}${post.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: post.cookie, 'x-forwarded-for': post.ip },
          body: new URLSearchParams(post.fields(serial)).toString(),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        if (response.status === checkedStatus) counts.checked += 1;
        else if (response.status === 429) {
          counts.refused += 1;
          // "As fast as the limits allow": the flood waits as long as it is told (at most
          // 5 s), so the figure is what the limits let through, not how fast this driver
          // can be refused on a machine it shares with the server.
          const wait = Math.min(5, Math.max(1, Number(response.headers.get('retry-after')) || 1));
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              stopped.signal.removeEventListener('abort', done);
              resolve();
            };
            const timer = setTimeout(done, wait * 1000);
            stopped.signal.addEventListener('abort', done);
          });
        } else counts.other += 1;
      } catch {
        counts.other += 1;
      }
    }
  };
  const loops = posts.flatMap((post) => Array.from({ length: perAddress }, () => loop(post)));
  return {
    async stop() {
      running = false;
      stopped.abort();
      await Promise.all(loops);
      return counts;
    },
  };
}

export async function startFlood(origin: string, settings: FloodSettings): Promise<Flood> {
  const addresses = Array.from({ length: settings.addresses }, (_, i) => `198.18.${i >> 8}.${(i & 0xff) + 1}`);
  const pairs = await Promise.all(addresses.map((ip) => csrfPair(origin, ip)));
  const posts = addresses.map(
    (ip, i): FloodPost => ({
      path: '/login',
      ip,
      cookie: pairs[i]!.cookie,
      fields: (serial) => ({ csrf_token: pairs[i]!.token, username: `flood-${serial}`, password: `guess-${serial}`, return_to: '/' }),
    }),
  );
  return runFlood(origin, posts, settings.perAddress, 401);
}

let accountFloods = 0;

/**
 * The account-page flood: a signed-in session posting wrong current passwords to
 * `/account/password`, from `addresses` addresses (one session each), each keeping
 * `perAddress` posts in flight. Once, each was checked on libuv's thread pool, the
 * one that signs tokens, and nothing limited them; now they go through the password queue
 * and the sign-in limits, so most are answered 429 at once.
 */
export async function startAccountFlood(
  origin: string,
  settings: FloodSettings,
  owner: { readonly username: string; readonly password: string },
): Promise<Flood> {
  // Each flood (warm-up, then every timed run) signs in from addresses of its own: the wrong
  // current passwords of the one before count against the owner's username from its
  // addresses, which then refuse the owner's sign-in for the rest of the window.
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
      const session = response.headers
        .getSetCookie()
        .map((line) => line.split(';')[0]!)
        .find((cookie) => cookie.includes('tessera_session='));
      if (response.status !== 303 || !session) throw new Error(`the flood owner could not sign in at ${origin}/login (${response.status})`);
      return { ip, token: pair.token, cookie: `${pair.cookie}; ${session}` };
    }),
  );
  const posts = sessions.map(
    (session): FloodPost => ({
      path: '/account/password',
      ip: session.ip,
      cookie: session.cookie,
      fields: (serial) => ({ csrf_token: session.token, current_password: `guess-${serial}`, new_password: 'never set by the flood' }),
    }),
  );
  return runFlood(origin, posts, settings.perAddress, 400);
}
