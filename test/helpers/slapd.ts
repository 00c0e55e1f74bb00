/**
 * OpenLDAP's slapd from Debian's packages (`.ci/run` installs `slapd` and `ldap-utils`),
 * started by a test with a throwaway configuration in a temporary directory, on a free high
 * port, seeded with people and groups: a real directory, no root and no system paths.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeServer, listenOnFreePort } from './server.ts';
import { until } from './wait.ts';

export const SLAPD = process.env['TESSERA_SLAPD'] ?? '/usr/sbin/slapd';
const SLAPADD = process.env['TESSERA_SLAPADD'] ?? '/usr/sbin/slapadd';
const SCHEMA = '/etc/ldap/schema';

/** Why directory tests cannot run here, or undefined when they can; in CI a missing slapd is a failure. */
export function slapdUnavailable(): string | undefined {
  if (existsSync(SLAPD) && existsSync(SLAPADD)) return undefined;
  if (process.env['CI']) throw new Error(`slapd is not installed at ${SLAPD}; .ci/run should have installed it`);
  return `directory tests skipped: no slapd at ${SLAPD} (apt-get install slapd ldap-utils)`;
}

export const LDAP_SUFFIX = 'dc=example,dc=com';
export const LDAP_ADMIN = `cn=admin,${LDAP_SUFFIX}`;
export const LDAP_ADMIN_PASSWORD = 'directory admin secret';

export interface Slapd {
  readonly url: string;
  /** Stops answering without closing anything (SIGSTOP): a directory that hangs. */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts slapd with `ldif` (entries under dc=example,dc=com) loaded; the admin binds as LDAP_ADMIN. */
export async function startSlapd(ldif: string): Promise<Slapd> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-slapd-'));
  mkdirSync(join(dir, 'data'));
  const conf = join(dir, 'slapd.conf');
  writeFileSync(
    conf,
    [
      `include ${SCHEMA}/core.schema`,
      `include ${SCHEMA}/cosine.schema`,
      `include ${SCHEMA}/inetorgperson.schema`,
      `pidfile ${join(dir, 'slapd.pid')}`,
      `argsfile ${join(dir, 'slapd.args')}`,
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      'database mdb',
      'maxsize 10485760',
      `suffix "${LDAP_SUFFIX}"`,
      `rootdn "${LDAP_ADMIN}"`,
      `rootpw "${LDAP_ADMIN_PASSWORD}"`,
      `directory ${join(dir, 'data')}`,
      // People's passwords are for binding as them only; the service account reads the rest.
      'access to attrs=userPassword by self =w by anonymous auth by * none',
      `access to * by dn.exact="${LDAP_ADMIN}" read by users read by * none`,
      '',
    ].join('\n'),
  );
  const seed = join(dir, 'seed.ldif');
  writeFileSync(seed, `dn: ${LDAP_SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n${ldif}`);
  const seeded = spawnSync(SLAPADD, ['-f', conf, '-l', seed], { encoding: 'utf8' });
  if (seeded.status !== 0) throw new Error(`slapadd failed: ${seeded.stderr}`);
  // A free port, released for slapd to take (the small race is retried below).
  let child: ChildProcess | null = null;
  let port = 0;
  for (let attempt = 0; attempt < 5 && child === null; attempt += 1) {
    const free = await listenOnFreePort();
    port = free.port;
    await closeServer(free.server);
    const started = spawn(SLAPD, ['-f', conf, '-h', `ldap://127.0.0.1:${port}/`, '-d', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let exited = false;
    started.once('exit', () => (exited = true));
    for (let wait = 0; wait < 100 && !exited; wait += 1) {
      if (await accepting(port)) {
        child = started;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (child === null) started.kill('SIGKILL');
  }
  if (child === null) throw new Error('slapd did not start');
  const running = child;
  return {
    url: `ldap://127.0.0.1:${port}`,
    async pause() {
      running.kill('SIGSTOP');
      // The stop takes hold when one of slapd's threads is next scheduled and passes it on to
      // the others; until then another thread may still answer (on a busy machine, tens of
      // milliseconds: a directory sign-in once succeeded in between). Linux shows each thread.
      const stopped = () =>
        readdirSync(`/proc/${running.pid}/task`).every((thread) =>
          readFileSync(`/proc/${running.pid}/task/${thread}/stat`, 'utf8')
            .replace(/^.*\) /s, '')
            .startsWith('T'),
        );
      await until('every slapd thread to stop on SIGSTOP', stopped, 5000, 5);
    },
    resume: () => void running.kill('SIGCONT'),
    async stop() {
      running.kill('SIGCONT');
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (running.exitCode === null) running.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
