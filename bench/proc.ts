/**
 * CPU time and peak memory of a server under load, read from Linux's /proc for the server
 * process and its descendants (the node:cluster workers), so the load generator's own
 * work is never counted. Elsewhere the figures are reported as unavailable.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux build Node supports. */
const TICKS_PER_SECOND = 100;

export const procAvailable = existsSync('/proc/self/stat');

function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The process and all its descendants that are alive now. */
export function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    // Field 4 of stat is the parent pid; it is index 1 after the command name.
    if (fields) parents.set(Number(entry), Number(fields[1]));
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i += 1) {
    for (const [pid, parent] of parents) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** Seconds of CPU (user + system) the processes have used so far. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    // utime and stime are fields 14 and 15 of stat: indexes 11 and 12 here.
    if (fields) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

/**
 * PostgreSQL's processes working for one database: its backends (the servers' pooled
 * connections, the bench's own) and autovacuum's workers there, found by their process
 * titles (`postgres: 15/main: USER DATABASE HOST(PORT) STATE`), so that other databases'
 * backends on a shared server are never counted. Empty where PostgreSQL runs elsewhere (a
 * container, another machine): its CPU is then unavailable.
 */
export function databaseProcesses(database: string): number[] {
  const pids: number[] = [];
  const word = new RegExp(`^postgres: .* ${database.replace(/[^a-z0-9_]/gi, '')}( |$)`);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let title: string;
    try {
      title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (word.test(title.replace(/\0/g, ' ').trimEnd())) pids.push(Number(entry));
  }
  return pids;
}

/** CPU ticks so far of each process, by pid: a reading to take the difference of. */
export function cpuTicks(pids: readonly number[]): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    const fields = statFields(pid);
    if (fields) ticks.set(pid, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/**
 * Seconds of CPU one database's PostgreSQL processes used between two readings: a backend
 * that started in between counts from its start, one that ended in between only up to the
 * first reading (pooled connections live through a run, so neither is common).
 */
export function databaseCpuBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let ticks = 0;
  for (const [pid, now] of after) ticks += now - (before.get(pid) ?? 0);
  return ticks / TICKS_PER_SECOND;
}

/**
 * Peak resident memory (VmHWM) in MB, summed over the processes: for several workers an
 * upper bound, since their peaks need not coincide.
 */
export function peakRssMb(pids: readonly number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match) kb += Number(match[1]);
    } catch {
      // The process ended: its memory is no longer held.
    }
  }
  return kb / 1024;
}

/** CPU seconds the whole machine has spent busy so far (all cores; /proc/stat). */
export function machineBusySeconds(): number {
  if (!procAvailable) return NaN;
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const busy = fields.reduce((sum, value) => sum + value, 0) - fields[3]! - fields[4]!;
  return busy / TICKS_PER_SECOND;
}
