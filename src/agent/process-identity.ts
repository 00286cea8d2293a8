// Killing processes by identity (the pid with its start time, `core/process-identity.ts`), checked
// before every signal, so a pid the kernel gave to another process since is never signalled.
import { realSleep, type Sleep } from "../core/deps.js";
import { isRunning, type ProcessIdentity, readStat } from "../core/process-identity.js";
import { groupAlive } from "./process-group.js";

// Who a process is lives in core (config checks the pids of its state files too); the agent's
// modules keep importing it from here.
export {
  bootId,
  identify,
  isRunning,
  type ProcessIdentity,
  sameProcess,
  selfIdentity,
} from "../core/process-identity.js";

/** What to end: the process, and with `group` the process group it leads as well. */
export interface KillTarget extends ProcessIdentity {
  group: boolean;
}

export interface KillOptions {
  graceMs: number;
  killWaitMs?: number;
  pollMs?: number;
  sleep?: Sleep;
}

/**
 * Whether anything of the target lives: the process itself, or (for a group it led when the kill
 * began) a member of that group. A group id is never given out again while a member lives, so the
 * members of a group verified at the start are still ours seconds later.
 */
function living(target: KillTarget): boolean {
  return isRunning(target) || (target.group && groupAlive(target.pid));
}

function signal(target: KillTarget, name: NodeJS.Signals): void {
  const recipients: number[] = [];
  // Checked right before the signal: a pid whose process ended may already be someone else's.
  if (isRunning(target)) recipients.push(target.pid);
  if (target.group) recipients.push(-target.pid);
  for (const to of recipients) {
    try {
      process.kill(to, name);
    } catch {
      // Gone meanwhile, or not ours to signal (EPERM): nothing more to do for it.
    }
  }
}

async function waitGone(
  targets: KillTarget[],
  ms: number,
  pollMs: number,
  sleep: Sleep,
): Promise<KillTarget[]> {
  let left = targets.filter(living);
  for (let waited = 0; left.length > 0 && waited < ms; waited += pollMs) {
    await sleep(pollMs);
    left = left.filter(living);
  }
  return left;
}

/**
 * Ends the processes (SIGTERM, SIGKILL for what is left after the grace), never one whose pid now
 * belongs to another process: a target is signalled only while it runs under its identity, and its
 * group only if it led that group, alive, when the kill began. Resolves with the survivors.
 */
export async function killProcesses(targets: KillTarget[], options: KillOptions): Promise<KillTarget[]> {
  const { graceMs, killWaitMs = 5_000, pollMs = 20, sleep = realSleep } = options;
  const live = targets
    .filter((t) => t.pid !== process.pid && isRunning(t))
    .map((t) => ({ ...t, group: t.group && readStat(t.pid)?.pgrp === t.pid }));
  if (live.length === 0) return [];
  for (const target of live) {
    signal(target, "SIGTERM");
    // A stopped process only acts on SIGTERM once continued.
    signal(target, "SIGCONT");
  }
  const stubborn = await waitGone(live, graceMs, pollMs, sleep);
  if (stubborn.length === 0) return [];
  for (const target of stubborn) signal(target, "SIGKILL");
  return waitGone(stubborn, killWaitMs, pollMs, sleep);
}
