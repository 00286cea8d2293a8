// Where a profile's gateway and dashboard serve, beyond config.yaml: the address a live process
// wrote in its pid file (the port it bound, which matters with port 0), else, while a live
// `tenax up` runs them, the address up keeps for each (the ports it was given as flags from the
// start, then what each bound). Null when neither says: config.yaml's ports are then the answer,
// which the caller reads. One answer for `tenax status`, the dashboard and `tenax profile`.
import { readFileSync } from "node:fs";
import { dashboardPidFile } from "./dashboard-pid.js";
import { readGatewayPid } from "./gateway-pid.js";
import type { ProfilePaths } from "./paths.js";
import { readUpState } from "./up-state.js";

export interface ServingAddress {
  /** Null when up was given a port but no host: config.yaml's host then. */
  host: string | null;
  port: number;
  /** A live process's pid file, or the profile's live tenax up. */
  source: "pid_file" | "up";
}

/** The host and port a pid file records, if the process it names is alive. */
function livePidFileAddress(file: string): { host: string; port: number } | null {
  let info: { host?: unknown; port?: unknown };
  try {
    info = JSON.parse(readFileSync(file, "utf8")) as typeof info;
  } catch {
    return null;
  }
  if (typeof info.host !== "string" || typeof info.port !== "number") return null;
  return readGatewayPid(file).running ? { host: info.host, port: info.port } : null;
}

function fromUp(address: { host?: string | null; port?: number | null } | undefined): ServingAddress | null {
  if (address === undefined || address.port === null || address.port === undefined) return null;
  return { host: address.host ?? null, port: address.port, source: "up" };
}

export function gatewayAddress(paths: ProfilePaths): ServingAddress | null {
  const live = livePidFileAddress(paths.pid);
  if (live !== null) return { ...live, source: "pid_file" };
  return fromUp(readUpState(paths)?.gateway);
}

export function dashboardAddress(paths: ProfilePaths): ServingAddress | null {
  const live = livePidFileAddress(dashboardPidFile(paths));
  if (live !== null) return { ...live, source: "pid_file" };
  const dashboard = readUpState(paths)?.dashboard;
  // A dashboard that stopped serves nowhere (up does not restart it); a gateway up gave up on is
  // still where up would start it again.
  return dashboard?.state === "stopped" ? null : fromUp(dashboard);
}

/** `http://HOST:PORT` to reach an address: one bound to every interface is reached through loopback. */
export function reachUrl(host: string, port: number): string {
  const reach = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reach.includes(":") ? `[${reach}]` : reach}:${port}`;
}
