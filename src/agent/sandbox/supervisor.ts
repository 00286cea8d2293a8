// The first program in a sandbox, between bwrap's init and the command's shell. bwrap ends the
// whole sandbox when its first program exits, which would kill what a command leaves running
// (`server &`); so this shell runs the command, tells Tenax on fd 3 when the command's shell exited
// but left processes behind ("left CODE"), and stays until they are gone. Its exit code is the
// shell's. SIGTERM gets a handler, not an ignore, so the command's shell starts with SIGTERM's
// default and can end gracefully while this one waits.

/** Arguments for `bwrap ... --`: `sh -c SUPERVISOR tenax-sandbox COMMAND`. */
export function supervised(command: string): string[] {
  return ["/bin/sh", "-c", SUPERVISOR, "tenax-sandbox", command];
}

/** In the sandbox's own /proc, pid 1 is bwrap's init and this shell is 2: more means leftovers. */
const SUPERVISOR = [
  "trap : TERM",
  '/bin/sh -c "$1" sh 3>&-',
  "code=$?",
  "exec >/dev/null 2>&1 </dev/null",
  "set -- /proc/[0-9]*",
  'if [ "$#" -gt 2 ]; then',
  '  echo "left $code" >&3',
  "  exec 3>&-",
  '  while set -- /proc/[0-9]*; [ "$#" -gt 2 ]; do sleep 0.5; done',
  "fi",
  'exit "$code"',
].join("\n");

/** The descriptor the supervisor reports on (the child's stdio[3]). */
export const STATUS_FD = 3;

/** The shell's exit code from what the supervisor wrote, or null when it said nothing (yet). */
export function leftCode(report: string): number | null {
  const match = /^left (\d+)$/m.exec(report);
  return match ? Number(match[1]) : null;
}
