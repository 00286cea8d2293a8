// Resume and watchdog tests share this: an agent on a real store over a simulator, closed after
// each test, the pid of an ended process (a lease owner nobody runs), and a host in miniature.
import { spawn } from "node:child_process";
import type { HostedWork, TurnHost } from "../../src/agent/resume.js";

export { cleanups, setupAgent } from "./agent.js";

/** The pid of a process that has ended: a lease owner nobody runs any more. */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((r) => child.on("close", r));
  return child.pid ?? 0;
}

/** A host that runs resumed turns at once and records them (the gateway's track, in miniature). */
export function host(running: (sessionId: string) => boolean = () => false): TurnHost<never> & {
  tracked: string[];
  interrupted: string[];
} {
  const tracked: string[] = [];
  const interrupted: string[] = [];
  return {
    tracked,
    interrupted,
    track(sessionId: string, work: HostedWork) {
      tracked.push(sessionId);
      return { result: work(new AbortController().signal, () => {}) };
    },
    isRunning: running,
    interrupt: (sessionId) => {
      if (!running(sessionId)) return false;
      interrupted.push(sessionId);
      return true;
    },
  };
}
