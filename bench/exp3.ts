import { load, median } from './load.ts';
import { startTessera } from './targets.ts';
const t = await startTessera({ workers: 1, deviceInterval: 0, cpuProfileDir: process.env.PROF ?? null, logDir: '/tmp/bw', postgres: null });
const batch = Number(process.argv[2] ?? 200); const reps = Number(process.argv[3] ?? 20);
const rates: number[] = []; const cpus: number[] = []; const p99s: number[] = [];
for (let rep = 0; rep < reps; rep++) {
  const codes = await t.mintCodes(batch);
  let i = 0;
  const bodies = codes.map(({ code, verifier }) => `grant_type=authorization_code&code=${code}&redirect_uri=${encodeURIComponent(t.redirectUri)}&code_verifier=${verifier}`);
  const r = await load({ url: t.origin, connections: 50, amount: batch, next: () => ({ method: 'POST', path: t.tokenPath, headers: { authorization: t.authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: bodies[i++ % batch]! }), classify: (s) => (s === 200 ? 'ok' : 'unexpected'), serverPid: t.pid });
  if (r.unexpected) console.log('unexpected', r.examples);
  if (rep >= 2) { rates.push(r.requests / r.seconds); cpus.push(r.cpuSeconds / r.seconds * 100); p99s.push(r.latencies.sort((a, b) => a - b)[Math.floor(r.latencies.length * 0.99)]!); }
}
console.log(`batch ${batch}: median rps ${Math.round(median(rates))} (min ${Math.round(Math.min(...rates))}, max ${Math.round(Math.max(...rates))}), cpu ${Math.round(median(cpus))}%, p99 ${median(p99s).toFixed(0)} ms`);
await t.close();
