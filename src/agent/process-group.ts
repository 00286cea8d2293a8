// Process groups: every command a tool starts leads its own group, so one signal reaches all it
// started (a shell's grandchildren included). Liveness ignores zombies: where nothing reaps orphans
// (a container whose init does not), a dead grandchild stays a zombie that kill(pid, 0) still finds.
import { readdirSync } from "node:fs";
import { realSleep, type Sleep } from "../core/deps.js";
import { dead, readStat, send } from "../core/process-identity.js";

export { dead, pidAlive, readStat, type StatLine } from "../core/process-identity.js";

const LINUX = process.platform === "linux";

/** Whether any process of the group `pgid` exists and is not a zombie. */
export function groupAlive(pgid: number): boolean {
  if (!send(-pgid, 0)) return false;
  if (!LINUX) return true;
  // The group exists, but perhaps only as zombies: look for a living member.
  const members = livingMembers(pgid, 1);
  return members === null || members.length > 0;
}

/** The living members of a group (at most `limit`), from /proc; null where /proc cannot be read. */
function livingMembers(pgid: number, limit = Number.POSITIVE_INFINITY): number[] | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    const stat = readStat(entry);
    if (stat !== null && stat.pgrp === pgid && !dead(stat.state)) found.push(Number(entry));
    if (found.length >= limit) break;
  }
  return found;
}

export interface KillGroupOptions {
  /** How long the group has to end after SIGTERM before it gets SIGKILL. */
  graceMs?: number;
  /** How long to wait for the group to be gone after SIGKILL. */
  killWaitMs?: number;
  pollMs?: number;
  sleep?: Sleep;
  /**
   * A member left out of SIGTERM (SIGKILL still reaches it): a sandbox's bwrap, whose end takes
   * everything in the sandbox with it at once, before it could end gracefully.
   */
  spare?: number;
}

export const DEFAULT_GRACE_MS = 2_000;

async function waitGone(pgid: number, ms: number, pollMs: number, sleep: Sleep): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += pollMs) {
    if (!groupAlive(pgid)) return true;
    await sleep(pollMs);
  }
  return !groupAlive(pgid);
}

/**
 * Ends the whole group: SIGTERM, then SIGKILL for whatever is left after the grace. Resolves once
 * no living member remains: true, or false if something survived even SIGKILL (a process stuck
 * in the kernel), so the caller can say so.
 */
export async function killGroup(pgid: number, options: KillGroupOptions = {}): Promise<boolean> {
  const { graceMs = DEFAULT_GRACE_MS, killWaitMs = 5_000, pollMs = 20, sleep = realSleep, spare } = options;
  if (!groupAlive(pgid)) return true;
  const members = spare === undefined ? null : livingMembers(pgid);
  const targets = members === null ? [-pgid] : members.filter((pid) => pid !== spare);
  for (const target of targets) send(target, "SIGTERM");
  // A stopped process only acts on SIGTERM once continued.
  for (const target of targets) send(target, "SIGCONT");
  if (await waitGone(pgid, graceMs, pollMs, sleep)) return true;
  send(-pgid, "SIGKILL");
  return waitGone(pgid, killWaitMs, pollMs, sleep);
}
