// The dashboard's pid file (`dashboard.pid`: pid, host, port), written once it listens and removed
// when it stops, so `tenax doctor` can tell the profile's own dashboard on its port from a stranger
// and `tenax status` knows a dashboard runs. Several dashboards may run; the file names the last.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "./atomic-write.js";
import { type GatewayProcess, readGatewayPid } from "./gateway-pid.js";
import type { ProfilePaths } from "./paths.js";

export interface DashboardPidInfo {
  pid: number;
  started_at: number;
  host: string;
  port: number;
}

export function dashboardPidFile(paths: ProfilePaths): string {
  return join(paths.dir, "dashboard.pid");
}

export function writeDashboardPid(paths: ProfilePaths, info: DashboardPidInfo): Promise<void> {
  return writeFileAtomic(dashboardPidFile(paths), `${JSON.stringify(info)}\n`, 0o600);
}

/** Remove the file if it still names `pid` (a later dashboard's file is left alone). */
export function removeDashboardPid(paths: ProfilePaths, pid: number): void {
  const file = dashboardPidFile(paths);
  try {
    if ((JSON.parse(readFileSync(file, "utf8")) as { pid?: unknown }).pid === pid)
      rmSync(file, { force: true });
  } catch {
    // No file, or not ours to judge: leave it.
  }
}

/** The pid the file names and whether that process is alive. */
export function readDashboardPid(paths: ProfilePaths): GatewayProcess {
  return readGatewayPid(dashboardPidFile(paths));
}

/** What the file records (pid, host, port), or null when there is none or it is not shaped so. */
export function readDashboardPidInfo(paths: ProfilePaths): DashboardPidInfo | null {
  try {
    const info = JSON.parse(readFileSync(dashboardPidFile(paths), "utf8")) as Partial<DashboardPidInfo>;
    const { pid, started_at, host, port } = info;
    if (typeof pid !== "number" || typeof host !== "string" || typeof port !== "number") return null;
    return { pid, started_at: typeof started_at === "number" ? started_at : 0, host, port };
  } catch {
    return null;
  }
}
