// One gateway per profile: the pid file is created exclusively, so two gateways starting at once
// cannot both win; a file naming a dead process (a crash) is reclaimed, a live one refuses.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { TenaxError } from "../core/errors.js";
import { writeFileAtomic } from "../profile/atomic-write.js";
import { type GatewayLauncher, readGatewayPid } from "../profile/gateway-pid.js";

export interface PidInfo {
  pid: number;
  started_at: number;
  host?: string;
  port?: number;
  /** How it was started, so advice for a dead gateway names the way to start it again. */
  started_by?: GatewayLauncher;
  args?: string[];
}

export interface PidLock {
  /** Record where the gateway listens once its port is bound. */
  update(info: PidInfo): Promise<void>;
  /** Remove the file if it is still ours. */
  release(): void;
  /** The pid of a dead holder whose file was reclaimed, or null. */
  reclaimed: number | null;
  /** That dead holder's pid and start time, when its file said both (a gateway that crashed). */
  crashed: { pid: number; started_at: number } | null;
}

export function acquirePidFile(file: string, info: PidInfo, profile: string): PidLock {
  let reclaimed: number | null = null;
  let crashed: PidLock["crashed"] = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o600);
      try {
        writeSync(fd, `${JSON.stringify(info)}\n`);
      } finally {
        closeSync(fd);
      }
      return lock(file, info.pid, reclaimed, crashed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readGatewayPid(file);
    if (holder.running && holder.pid !== info.pid) {
      throw new TenaxError(
        "gateway_running",
        `a gateway for profile ${profile} is already running (pid ${holder.pid}, pid file ${file})`,
        {
          hint: `stop it first (kill ${holder.pid}), or use another profile with --profile NAME`,
          data: { pid: holder.pid },
        },
      );
    }
    // Dead holder, our own pid, or an unreadable file: it holds nothing, so take it over.
    reclaimed = holder.pid;
    crashed = holder.pid === null ? null : startedOf(file, holder.pid);
    rmSync(file, { force: true });
  }
  throw new TenaxError(
    "gateway_pid_file",
    `could not take the pid file ${file}; another gateway keeps starting`,
  );
}

/** The dead holder's start time, from a pid file Tenax wrote (JSON with pid and started_at). */
function startedOf(file: string, pid: number): PidLock["crashed"] {
  try {
    const info = JSON.parse(readFileSync(file, "utf8")) as Partial<PidInfo>;
    return info.pid === pid && Number.isSafeInteger(info.started_at)
      ? { pid, started_at: Number(info.started_at) }
      : null;
  } catch {
    return null;
  }
}

function lock(file: string, pid: number, reclaimed: number | null, crashed: PidLock["crashed"]): PidLock {
  const ours = () => {
    try {
      return readGatewayPid(file).pid === pid && readFileSync(file, "utf8") !== "";
    } catch {
      return false;
    }
  };
  return {
    reclaimed,
    crashed,
    update: (info) => writeFileAtomic(file, `${JSON.stringify(info)}\n`, 0o600),
    release: () => {
      if (ours()) rmSync(file, { force: true });
    },
  };
}
