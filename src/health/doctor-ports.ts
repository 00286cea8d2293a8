// The gateway's and the dashboard's ports: free, or held by this profile's own gateway (the pid
// in its pid file, confirmed through /proc where it can be read). Anything else holding one is a fail.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createServer } from "node:net";
import { readGatewayPid } from "../config/gateway-pid.js";
import type { ProfilePaths } from "../config/paths.js";
import { configuredPorts } from "../config/ports.js";
import type { TenaxConfig } from "../config/schema.js";
import type { Check, DoctorDeps } from "./doctor-check.js";

export const bindable = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });

export async function portsCheck(
  paths: ProfilePaths,
  config: TenaxConfig | null,
  deps: Pick<DoctorDeps, "portFree">,
): Promise<Check> {
  const lenient = configuredPorts(paths.config);
  const wanted: { what: string; host: string; port: number | null }[] = [
    {
      what: "gateway",
      host: config?.gateway.host ?? "127.0.0.1",
      port: config?.gateway.port ?? lenient.gateway,
    },
    {
      what: "dashboard",
      host: config?.dashboard.host ?? "127.0.0.1",
      port: config?.dashboard.port ?? lenient.dashboard,
    },
  ];
  const gateway = readGatewayPid(paths.pid);
  const notes: string[] = [];
  const taken: { what: string; port: number }[] = [];
  for (const { what, host, port } of wanted) {
    if (port === null) {
      notes.push(`${what} port unknown (config.yaml does not load)`);
      continue;
    }
    if (await deps.portFree(host, port)) {
      notes.push(`${what} ${host}:${port} free`);
      continue;
    }
    const own = gateway.running && gateway.pid !== null ? holdsPort(gateway.pid, port) : false;
    if (own !== false) {
      notes.push(
        `${what} ${host}:${port} held by this profile's gateway (pid ${gateway.pid}${own === null ? ", by its pid file" : ""})`,
      );
      continue;
    }
    taken.push({ what, port });
  }
  if (taken.length === 0) return { name: "ports", status: "ok", detail: notes.join("; ") };
  const first = taken[0]?.port ?? 0;
  return {
    name: "ports",
    status: "fail",
    detail: `${taken.map((t) => `the ${t.what} port ${t.port} is held by another process`).join("; ")}${
      gateway.running ? "" : " (this profile's gateway is not running)"
    }`,
    next: `find the holder with ss -ltnp 'sport = :${first}', then stop it or change the port in ${paths.config}`,
  };
}

/**
 * Whether `pid` has a listening socket on `port`: true or false from /proc, null when /proc cannot
 * tell (another user's process, or no /proc), in which case the pid file is taken at its word.
 */
export function holdsPort(pid: number, port: number): boolean | null {
  let inodes: Set<string>;
  try {
    inodes = new Set(
      ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) => {
        try {
          return listeningInodes(readFileSync(file, "utf8"), port);
        } catch {
          return [];
        }
      }),
    );
    const fds = readdirSync(`/proc/${pid}/fd`);
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode !== undefined && inodes.has(inode)) return true;
    }
  } catch {
    return null;
  }
  return false;
}

/** Inodes of sockets listening (state 0A) on `port` in a /proc/net/tcp table. */
export function listeningInodes(table: string, port: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return table
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(`:${hex}`) && f[3] === "0A")
    .map((f) => f[9] ?? "");
}
