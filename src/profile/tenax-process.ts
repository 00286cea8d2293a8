// Whether a pid that a state file recorded (up.json) is still the Tenax process that wrote it, and
// not one the kernel gave that pid to since: the same start time (and boot), and a command line that
// runs this Tenax's CLI script with the expected command. Checked before it is trusted or signalled.
import { readlinkSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bootId, commandLine, identify, selfIdentity } from "../core/process-identity.js";
import { isProcessAlive } from "./gateway-pid.js";

/** This Tenax's CLI entry point, bin/tenax.js, from dist/config or src/config. */
export function tenaxBin(): string {
  return resolve(fileURLToPath(new URL("../../bin/tenax.js", import.meta.url)));
}

/** A process as a state file records it: its pid, start time and boot (null where unknown). */
export interface RecordedProcess {
  pid: number;
  start: number | null;
  boot_id: string | null;
}

/** This process as a state file should record it. */
export function recordSelf(): RecordedProcess {
  return { pid: process.pid, start: selfIdentity()?.start ?? null, boot_id: bootId() };
}

/**
 * Whether `recorded` is still a live Tenax running `command` (up). Off Linux, where none of it can
 * be read, a live pid is all there is to go by.
 */
export function isTenaxProcess(recorded: RecordedProcess, command: string): boolean {
  if (!isProcessAlive(recorded.pid)) return false;
  if (selfIdentity() === null) return true;
  const boot = bootId();
  if (recorded.boot_id !== null && boot !== null && recorded.boot_id !== boot) return false;
  if (recorded.start === null || identify(recorded.pid)?.start !== recorded.start) return false;
  const argv = commandLine(recorded.pid) ?? [];
  return argv.includes(command) && runsTenaxScript(recorded.pid, argv);
}

/** Whether a word of `argv` is this Tenax's CLI script (through any symlink, or relative to its cwd). */
function runsTenaxScript(pid: number, argv: readonly string[]): boolean {
  let script: string;
  try {
    script = realpathSync(tenaxBin());
  } catch {
    return false;
  }
  let cwd = "/";
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    // Another user's, or gone: only absolute words can match.
  }
  return argv.some((word) => {
    try {
      return realpathSync(resolve(cwd, word)) === script;
    } catch {
      return false;
    }
  });
}
