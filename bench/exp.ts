import { readFileSync } from 'node:fs';
import { load } from './load.ts';
import { startTessera } from './targets.ts';
const idle = () => { const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number); return { idle: f[3]! + f[4]!, total: f.reduce((a, b) => a + b, 0) }; };
const t = await startTessera({ workers: Number(process.argv[2] ?? 1), deviceInterval: 0, cpuProfileDir: process.env.PROF ?? null, logDir: '/tmp/bw', postgres: null });
const n = Number(process.argv[3] ?? 6000);
const reps = Number(process.argv[4] ?? 1);
for (let rep = 0; rep < reps; rep++) {
const codes = await t.mintCodes(n);
let i = 0;
const bodies = codes.map(({ code, verifier }) => `grant_type=authorization_code&code=${code}&redirect_uri=${encodeURIComponent(t.redirectUri)}&code_verifier=${verifier}`);
const c0 = process.cpuUsage(); const s0 = idle();
const r = await load({ url: t.origin, connections: Number(process.env.C ?? 50), amount: n, next: () => ({ method: 'POST', path: t.tokenPath, headers: { authorization: t.authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: bodies[i++ % n]! }), classify: (s) => (s === 200 ? 'ok' : 'unexpected'), serverPid: t.pid });
const c = process.cpuUsage(c0); const s1 = idle();
if (rep > 0) console.log({ rps: Math.round(r.requests / r.seconds), unexpected: r.unexpected, serverCpuPct: Math.round(r.cpuSeconds / r.seconds * 100), driverCpuPct: Math.round((c.user + c.system) / 1e4 / r.seconds), machineBusyPct: Math.round(100 * (1 - (s1.idle - s0.idle) / (s1.total - s0.total)) * 2) });
}
await t.close();
