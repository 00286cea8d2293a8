// The mark every command a tool starts carries in its environment, which all its descendants
// inherit and which /proc/PID/environ shows even after `setsid`, a double fork or a reparenting to
// init: the profile, the task and the Tenax process that owns it (pid and start time). A task's end
// and the next process of the profile find by it what escaped the task's process groups. A command
// that clears its environment (`env -i`) drops the mark: the durable record (process-ledger.ts) of
// the shell it was started as still names it.
import { readdirSync, realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { readProcFile } from "../core/proc-file.js";
import { dead, readStat } from "./process-group.js";
import { type ProcessIdentity, sameProcess } from "./process-identity.js";

export const PROFILE_VAR = "TENAX_PROFILE_DIR";
export const TASK_VAR = "TENAX_TASK_ID";
export const OWNER_VAR = "TENAX_TASK_OWNER";

export interface Marks {
  /** The profile's folder (its real path): another profile's processes are never touched. */
  profile: string;
  taskId: string;
  /** The Tenax process that runs the task; null when the mark cannot be read. */
  owner: ProcessIdentity | null;
}

export interface MarkedProcess extends ProcessIdentity {
  marks: Marks;
}

/**
 * The profile as its processes' marks name it: its folder's real path, however it was reached. One
 * function for every process that marks (the agent, `tenax mcp test`), so the next start of any of
 * them finds what another left.
 */
export function profileMark(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

export const ownerText = (owner: ProcessIdentity) => `${owner.pid}:${owner.start}`;

function parseOwner(text: string | undefined): ProcessIdentity | null {
  const match = /^(\d+):(\d+)$/.exec(text ?? "");
  return match ? { pid: Number(match[1]), start: Number(match[2]) } : null;
}

/** The variables a command of `taskId` gets, last, so nothing it is given can change them. */
export function markEnv(profile: string, owner: ProcessIdentity, taskId: string): Record<string, string> {
  return { [PROFILE_VAR]: profile, [TASK_VAR]: taskId, [OWNER_VAR]: ownerText(owner) };
}

/** A text looked for at the start of a variable in an environ block (NUL-separated). */
class Needle {
  private readonly bare: Buffer;
  private readonly after: Buffer;
  constructor(text: string) {
    this.bare = Buffer.from(text);
    this.after = Buffer.concat([Buffer.of(0), this.bare]);
  }
  get length(): number {
    return this.bare.length;
  }
  /** Where it starts in `environ`, or -1. */
  in(environ: Buffer): number {
    if (environ.subarray(0, this.bare.length).equals(this.bare)) return 0;
    const at = environ.indexOf(this.after);
    return at < 0 ? -1 : at + 1;
  }
}

const NAMES = new Map([PROFILE_VAR, TASK_VAR, OWNER_VAR].map((name) => [name, new Needle(`${name}=`)]));

function value(environ: Buffer, name: string): string | undefined {
  const prefix = NAMES.get(name) ?? new Needle(`${name}=`);
  const at = prefix.in(environ);
  if (at < 0) return undefined;
  const end = environ.indexOf(0, at);
  return environ.toString("utf8", at + prefix.length, end < 0 ? environ.length : end);
}

export interface ScanFilter {
  /** Only processes marked with this profile. */
  profile?: string;
  /** Only processes whose owner is this process. */
  owner?: ProcessIdentity;
  /** Only processes of this task. */
  taskId?: string;
}

/** Processes looked at between two yields to the event loop (under a millisecond of work). */
const SLICE = 64;

/**
 * Every live process of this user whose environment carries a mark matching `filter`, read from
 * /proc once (this process left out). Another user's processes and unreadable ones are skipped;
 * off Linux there is no /proc and the answer is empty. Reading another process's environment
 * costs the kernel a look into its memory (about 5 ms of CPU for 300 processes, bench/proc-scan.ts):
 * the scan yields to the event loop every SLICE processes so the gateway's turns go on meanwhile.
 */
export async function scanMarked(filter: ScanFilter): Promise<MarkedProcess[]> {
  // The cheapest test first: one exact variable, looked for in the raw block.
  const needle = new Needle(
    filter.owner !== undefined
      ? `${OWNER_VAR}=${ownerText(filter.owner)}\0`
      : filter.profile !== undefined
        ? `${PROFILE_VAR}=${filter.profile}\0`
        : `${OWNER_VAR}=`,
  );
  const uid = process.getuid?.();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: MarkedProcess[] = [];
  let looked = 0;
  for (const entry of entries) {
    if (++looked % SLICE === 0) await yieldToLoop();
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      // Only root can read another user's environ; for root, the owner is checked instead.
      if (uid === 0 && statSync(`/proc/${entry}`).uid !== uid) continue;
    } catch {
      continue;
    }
    // Shared bytes: everything needed from them is taken before the next read.
    const environ = readProcFile(`/proc/${entry}/environ`);
    if (environ === null || needle.in(environ) < 0) continue;
    const marks: Marks = {
      profile: value(environ, PROFILE_VAR) ?? "",
      taskId: value(environ, TASK_VAR) ?? "",
      owner: parseOwner(value(environ, OWNER_VAR)),
    };
    if (filter.profile !== undefined && marks.profile !== filter.profile) continue;
    if (filter.taskId !== undefined && marks.taskId !== filter.taskId) continue;
    if (filter.owner !== undefined && (marks.owner === null || !sameProcess(marks.owner, filter.owner)))
      continue;
    const stat = readStat(pid);
    if (stat === null || dead(stat.state)) continue;
    found.push({ pid, start: stat.start, marks });
  }
  return found;
}
