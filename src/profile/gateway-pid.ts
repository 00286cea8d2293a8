// Whether a profile's gateway is running, from its pid file (`gateway.pid`): the file names a pid,
// and that pid must still be a live process, so a pid file left by a crash does not count.
import { readFileSync } from "node:fs";

export interface GatewayProcess {
  /** The pid the file names, or null when there is no readable pid file. */
  pid: number | null;
  running: boolean;
}

/** Read a pid file holding a bare pid, or JSON with a `pid` field. */
export function readGatewayPid(pidFile: string): GatewayProcess {
  let text: string;
  try {
    text = readFileSync(pidFile, "utf8").trim();
  } catch {
    return { pid: null, running: false };
  }
  const pid = parsePid(text);
  return { pid, running: pid !== null && isProcessAlive(pid) };
}

function parsePid(text: string): number | null {
  let value: unknown = text;
  if (text.startsWith("{")) {
    try {
      value = (JSON.parse(text) as { pid?: unknown }).pid;
    } catch {
      return null;
    }
  }
  const pid = typeof value === "number" ? value : /^[0-9]+$/.test(String(value)) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}

/** Signal 0 checks existence; EPERM means the process exists but belongs to someone else. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** How a gateway was started: by `tenax up`, by its systemd unit, or by hand (`tenax gateway run`). */
export type GatewayLauncher = "up" | "systemd" | "run";

export interface GatewayLaunch {
  started_by: GatewayLauncher;
  /** The `tenax` arguments (without --profile) that started it, e.g. gateway run --port 0. */
  args: string[];
}

/** What the gateway's pid file says about how it was started; null for a file without it. */
export function readGatewayLaunch(pidFile: string): GatewayLaunch | null {
  try {
    const info = JSON.parse(readFileSync(pidFile, "utf8")) as { started_by?: unknown; args?: unknown };
    const by = info.started_by;
    const args = info.args;
    if (by !== "up" && by !== "systemd" && by !== "run") return null;
    if (!Array.isArray(args) || !args.every((a): a is string => typeof a === "string")) return null;
    return { started_by: by, args };
  } catch {
    return null;
  }
}
