// A `tenax` child of `tenax up` (the gateway, the dashboard): the same node and CLI for the same
// profile, its output straight to up's terminal, up's pipe on its stdin (it stops by itself when up
// is gone), and its own process group, so a Ctrl-C on the terminal reaches only up, which then
// stops the children in order (the gateway drains first) instead of each on its own.
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { PARENT_PIPE_ENV } from "../../core/parent-pipe.js";
import { identify } from "../../core/process-identity.js";
import { DEFAULT_PROFILE } from "../../profile/paths.js";
import type { Exit } from "./restart-policy.js";

export interface TenaxChild {
  pid: number | null;
  /** Its start time (/proc/PID/stat), recorded beside the pid in up.json; null where unknown. */
  start: number | null;
  /** Resolves once the process has ended. */
  exited: Promise<Exit>;
  alive(): boolean;
  kill(signal: NodeJS.Signals): void;
}

export function spawnTenax(profile: string, args: readonly string[]): TenaxChild {
  const argv = [
    ...process.execArgv,
    process.argv[1] ?? "tenax",
    ...(profile === DEFAULT_PROFILE ? [] : ["--profile", profile]),
    ...args,
  ];
  const child = spawn(process.execPath, argv, {
    stdio: ["pipe", "inherit", "inherit"],
    env: { ...process.env, [PARENT_PIPE_ENV]: "1" },
    detached: true,
  });
  let ended = false;
  const exited = new Promise<Exit>((resolve) => {
    child.once("exit", (code, signal) => {
      ended = true;
      resolve({ code, signal });
    });
    child.once("error", () => {
      // The process could not be started at all (no such file, no resources): as a failed start.
      if (child.pid === undefined) {
        ended = true;
        resolve({ code: 1, signal: null });
      }
    });
  });
  // A write end that errors (the child is gone) must not become an uncaught exception in up.
  child.stdin?.on("error", () => undefined);
  return {
    pid: child.pid ?? null,
    // Read at once: the pid is still this child's (up has not reaped it), and fork set the time.
    start: child.pid === undefined ? null : (identify(child.pid)?.start ?? null),
    exited,
    alive: () => !ended,
    kill: (signal) => {
      if (!ended) child.kill(signal);
    },
  };
}

/** The code a process exited with, or 128 + the signal's number as a shell reports it. */
export function exitCode(exit: Exit): number {
  if (exit.code !== null) return exit.code;
  const number = exit.signal === null ? undefined : constants.signals[exit.signal as NodeJS.Signals];
  return number === undefined ? 1 : 128 + number;
}
