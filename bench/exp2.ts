import autocannon from 'autocannon';
import { startTessera } from './targets.ts';
const t = await startTessera({ workers: 1, deviceInterval: 0, cpuProfileDir: null, logDir: '/tmp/bw', postgres: null });
for (let rep = 0; rep < 8; rep++) {
  const codes = await t.mintCodes(200);
  let i = 0; const times: number[] = []; const lats: number[] = [];
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const inst = autocannon({ url: t.origin, connections: 50, amount: 200, requests: [{ setupRequest: () => { const c = codes[i++ % 200]!; return { method: 'POST', path: t.tokenPath, headers: { authorization: t.authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=authorization_code&code=${c.code}&redirect_uri=${encodeURIComponent(t.redirectUri)}&code_verifier=${c.verifier}` }; } }] }, () => resolve());
    inst.on('response', (_c: unknown, _s: number, _b: number, rt: number) => { times.push(performance.now() - start); lats.push(rt); if (times.length >= 200) inst.stop(); });
  });
  lats.sort((a, b) => a - b);
  console.log(`first ${times[0]!.toFixed(0)} ms, 50th ${times[49]!.toFixed(0)}, 100th ${times[99]!.toFixed(0)}, 150th ${times[149]!.toFixed(0)}, last ${times[199]!.toFixed(0)} ms; lat p50 ${lats[100]!.toFixed(0)} max ${lats[199]!.toFixed(0)}`);
}
await t.close();
