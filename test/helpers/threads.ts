import { readdirSync, readFileSync } from 'node:fs';

/**
 * The nice value of each of this process's threads, from /proc (Linux): how a test sees the
 * priority a thread gave itself, which no API of Node's reads for another thread.
 */
export function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').flatMap((tid) => {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      return []; // the thread ended between the listing and the read
    }
    // proc_pid_stat(5): the name in parentheses may hold spaces; nice is the 19th field, the 17th after it.
    return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
  });
}
