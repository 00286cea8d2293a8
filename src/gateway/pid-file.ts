// One gateway per profile and home: the pid file is created exclusively, so two gateways starting
// at once cannot both win; a file naming a dead process (a crash) is reclaimed, a live one refuses.
// On a store several gateways share (PostgreSQL) a home may run more than one: each further gateway
// holds a numbered file beside it (gateway.2.pid, gateway.3.pid, ...) by the same rule, and the
// first file stays the one local commands read (`tenax status`, the URL `tenax chat` finds).
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
  /** The pid file held: the profile's, or a numbered one beside it (a further gateway of a shared store). */
  file: string;
  /** Record where the gateway listens once its port is bound. */
  update(info: PidInfo): Promise<void>;
  /** Remove the file if it is still ours. */
  release(): void;
  /** The pid of a dead holder whose file was reclaimed, or null. */
  reclaimed: number | null;
  /** That dead holder's pid and start time, when its file said both (a gateway that crashed). */
  crashed: { pid: number; started_at: number } | null;
}

/** The most gateways one home runs on a shared store (numbered pid files tried). */
export const MAX_GATEWAYS_PER_HOME = 32;

/** A numbered pid file beside `file`: gateway.pid -> gateway.N.pid. */
export function numberedPidFile(file: string, n: number): string {
  return n === 1 ? file : file.replace(/(\.pid)?$/, `.${n}$1`);
}

/**
 * Take the profile's pid file; with `shared` (the store is one several gateways share), the first
 * free numbered file when a live gateway holds it. Refuses with `gateway_running` otherwise.
 */
export function acquirePidFile(
  file: string,
  info: PidInfo,
  profile: string,
  options: { shared?: boolean } = {},
): PidLock {
  if (!options.shared) return acquireOne(file, info, profile, false);
  for (let n = 1; n <= MAX_GATEWAYS_PER_HOME; n++) {
    try {
      return acquireOne(numberedPidFile(file, n), info, profile, true);
    } catch (error) {
      if (!TenaxError.isInstance(error) || error.code !== "gateway_running") throw error;
    }
  }
  throw new TenaxError(
    "gateway_running",
    `${MAX_GATEWAYS_PER_HOME} gateways of profile ${profile} already run from this home (pid files ${file} to ${numberedPidFile(file, MAX_GATEWAYS_PER_HOME)})`,
    { hint: "stop one of them first, or run further gateways from another home (another host)" },
  );
}

function acquireOne(file: string, info: PidInfo, profile: string, shared: boolean): PidLock {
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
          hint: shared
            ? `stop it first (kill ${holder.pid})`
            : `stop it first (kill ${holder.pid}), or use another profile with --profile NAME; several gateways of one profile need a store they share (store.engine: postgres, see docs/STORE-ENGINES.md)`,
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
    file,
    reclaimed,
    crashed,
    update: (info) => writeFileAtomic(file, `${JSON.stringify(info)}\n`, 0o600),
    release: () => {
      if (ours()) rmSync(file, { force: true });
    },
  };
}
