// Who a process is, beyond its pid: the pid with its start time (/proc/PID/stat field 22), so a pid
// the kernel gave to another process since is never taken for ours, and the boot it belongs to, so
// a record from before a reboot is never matched; and what it runs (/proc/PID/cmdline). Off Linux
// (no /proc) none of it is known.
import { readFileSync } from "node:fs";
import { readProcFile } from "./proc-file.js";

export interface StatLine {
  state: string;
  pgrp: number;
  /** Field 22: when the process started, in clock ticks since boot; with the pid, who it is. */
  start: number;
}

/** Fields of /proc/PID/stat after the command name, which may itself hold spaces and parentheses. */
export function readStat(pid: number | string): StatLine | null {
  const bytes = readProcFile(`/proc/${pid}/stat`);
  if (bytes === null) return null;
  const text = bytes.toString("latin1");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 of the line (the state), so field 22 is fields[19].
  return { state: fields[0] ?? "", pgrp: Number(fields[2]), start: Number(fields[19]) };
}

export const dead = (state: string) => state === "Z" || state === "X" || state === "x";

export interface ProcessIdentity {
  pid: number;
  /** Clock ticks after boot at which it started. */
  start: number;
}

/** A live (not zombie) process's identity, or null when there is none with this pid. */
export function identify(pid: number): ProcessIdentity | null {
  const stat = readStat(pid);
  if (stat === null || dead(stat.state) || !Number.isFinite(stat.start)) return null;
  return { pid, start: stat.start };
}

/** Whether this very process (same pid, same start) still runs and is not a zombie. */
export function isRunning(id: ProcessIdentity): boolean {
  return identify(id.pid)?.start === id.start;
}

let self: ProcessIdentity | null | undefined;

/** This process: the owner written on every command it starts (null where /proc is missing). */
export function selfIdentity(): ProcessIdentity | null {
  if (self === undefined) self = identify(process.pid);
  return self;
}

/** The kernel's id of the current boot, or null off Linux. */
export function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}

export const sameProcess = (a: ProcessIdentity, b: ProcessIdentity) => a.pid === b.pid && a.start === b.start;

/** The arguments a process was started with (argv, the program first), or null when unreadable. */
export function commandLine(pid: number): string[] | null {
  const bytes = readProcFile(`/proc/${pid}/cmdline`);
  if (bytes === null || bytes.length === 0) return null;
  const words = bytes.toString("utf8").split("\0");
  if (words.at(-1) === "") words.pop();
  return words;
}

const LINUX = process.platform === "linux";

/** Sends `signal` (0 only probes); false when no such process or group exists. */
export function send(target: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether a process with this pid exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  if (!send(pid, 0)) return false;
  if (!LINUX) return true;
  const stat = readStat(pid);
  return stat !== null && !dead(stat.state);
}
