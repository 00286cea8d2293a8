// The gateway's and the dashboard's ports: free, or held by this profile's own gateway or dashboard
// (the pid in gateway.pid or dashboard.pid, confirmed through /proc where it can be read; under
// `tenax up` these are up's two children). Anything else holding one is a fail.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createServer } from "node:net";
import type { TenaxConfig } from "../config/schema.js";
import { BindError, bindError } from "../http/bind-error.js";
import { readDashboardPid } from "../profile/dashboard-pid.js";
import { readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { configuredPorts } from "../profile/ports.js";
import type { Check, DoctorDeps } from "./doctor-check.js";

export const tryBind = (host: string, port: number): Promise<unknown> =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", (error) => resolve(bindError(error, host, port, { name: "doctor" })));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(null)));
  });

export async function portsCheck(
  paths: ProfilePaths,
  config: TenaxConfig | null,
  deps: Pick<DoctorDeps, "tryBind">,
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
  // The profile's own processes that may hold one of its ports.
  const owners = [
    { name: "gateway", holder: gateway },
    { name: "dashboard", holder: readDashboardPid(paths) },
  ];
  const notes: string[] = [];
  const taken: { what: string; port: number }[] = [];
  // A host nothing can listen on is that, not a port another process holds.
  const hosts: string[] = [];
  for (const { what, host, port } of wanted) {
    if (port === null) {
      notes.push(`${what} port unknown (config.yaml does not load)`);
      continue;
    }
    const problem = await deps.tryBind(host, port);
    if (problem === null) {
      notes.push(`${what} ${host}:${port} free`);
      continue;
    }
    if (BindError.isBindError(problem) && problem.setting === "host") {
      hosts.push(`${what}.host: ${problem.message}`);
      continue;
    }
    const own = ownerOf(owners, what, port);
    if (own !== null) {
      notes.push(
        `${what} ${host}:${port} held by this profile's ${own.name} (pid ${own.pid}${own.byFile ? ", by its pid file" : ""})`,
      );
      continue;
    }
    taken.push({ what, port });
  }
  if (hosts.length > 0)
    return {
      name: "ports",
      status: "fail",
      detail: [...hosts, ...notes].join("; "),
      next: `set the host in ${paths.config} to an address of this machine: 127.0.0.1 (this machine only), 0.0.0.0 (every interface), or one that ip -brief address lists`,
    };
  if (taken.length === 0) return { name: "ports", status: "ok", detail: notes.join("; ") };
  const first = taken[0]?.port ?? 0;
  return {
    name: "ports",
    status: "fail",
    detail: `${taken.map((t) => `the ${t.what} port ${t.port} is held by another process${describeHolder(t.port)}`).join("; ")}${
      gateway.running ? "" : " (this profile's gateway is not running)"
    }`,
    next: `find the holder with ss -ltnp 'sport = :${first}', then stop it or change the port in ${paths.config}`,
  };
}

/**
 * Which of the profile's own live processes listens on `port`: /proc decides where it can be read;
 * where it cannot (another user's process, no /proc), the pid file is taken at its word, but only
 * for the process whose own port it is, so that a dashboard is never taken for the gateway's holder.
 */
function ownerOf(
  owners: { name: string; holder: { pid: number | null; running: boolean } }[],
  what: string,
  port: number,
): { name: string; pid: number; byFile: boolean } | null {
  for (const { name, holder } of owners) {
    if (!holder.running || holder.pid === null) continue;
    const holds = holdsPort(holder.pid, port);
    if (holds === true) return { name, pid: holder.pid, byFile: false };
    if (holds === null && name === what) return { name, pid: holder.pid, byFile: true };
  }
  return null;
}

/** " (pid N: its command line)" when /proc shows who listens on the port, else "". */
function describeHolder(port: number): string {
  const inodes = listeningSocketInodes(port);
  if (inodes.size === 0) return "";
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name));
  } catch {
    return "";
  }
  for (const pid of pids) {
    if (!socketInodesOf(Number(pid)).some((inode) => inodes.has(inode))) continue;
    let command = "";
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    } catch {
      // Gone meanwhile, or another user's: the pid alone still helps.
    }
    return ` (pid ${pid}${command ? `: ${command.slice(0, 120)}` : ""})`;
  }
  return "";
}

function listeningSocketInodes(port: number): Set<string> {
  return new Set(
    ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) => {
      try {
        return listeningInodes(readFileSync(file, "utf8"), port);
      } catch {
        return [];
      }
    }),
  );
}

/** The inodes of a process's sockets; empty when its fds cannot be read. */
function socketInodesOf(pid: number): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  return fds.flatMap((fd) => {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      return inode === undefined ? [] : [inode];
    } catch {
      return [];
    }
  });
}

/**
 * Whether `pid` has a listening socket on `port`: true or false from /proc, null when /proc cannot
 * tell (another user's process, or no /proc), in which case the pid file is taken at its word.
 */
export function holdsPort(pid: number, port: number): boolean | null {
  try {
    readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  const inodes = listeningSocketInodes(port);
  return socketInodesOf(pid).some((inode) => inodes.has(inode));
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
