// Who claimed a cron run: "pid:N@START" of the process (its pid and its start time, so a reused
// pid is not taken for the claimer), and whether that process still runs.
import { isRunning, selfIdentity } from "../core/process-identity.js";

export function ownerOf(): string {
  const self = selfIdentity();
  return self === null ? `pid:${process.pid}` : `pid:${self.pid}@${self.start}`;
}

export function ownerAlive(owner: string): boolean {
  const match = /^pid:(\d+)@(\d+)$/.exec(owner);
  if (!match) return false;
  return isRunning({ pid: Number(match[1]), start: Number(match[2]) });
}
