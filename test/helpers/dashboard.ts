// A real `tenax dashboard` as a child process (the built CLI), stopped after each test that starts
// one, and the URL it printed; plus a free port for a gateway that must come back at the same address.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import type { DashboardLogin } from "./dashboard-login.js";
import { type ListeningProcess, startListening } from "./listening.js";

export type DashboardProcess = ListeningProcess;

/** Start `tenax dashboard` and wait for its "listening" line; rejects with its output if it exits first. */
export function startDashboard(home: string, args: string[] = ["--port", "0"]): Promise<DashboardProcess> {
  return startListening(home, ["dashboard", ...args], "dashboard");
}

/** The login a started dashboard's printed link began (token mode, the default); throws if it printed none. */
export function loginOf(dashboard: DashboardProcess): DashboardLogin {
  if (dashboard.login === null)
    throw new Error(`the dashboard printed no login link:\n${dashboard.stdout()}\n${dashboard.stderr()}`);
  return dashboard.login;
}

/**
 * A port nothing listens on right now, for a server that must come back later at the same address.
 * It is drawn from below the OS's ephemeral range: a port the OS hands out for `listen(0)` or an
 * outgoing connection could be given to another test's server between our close and its reuse here
 * (CI saw "port 38007 is already in use" that way), while a port below the range is never handed out.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  const floor = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port found below the ephemeral range (${floor}..${low - 1}) in 50 tries`);
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 2048) return low;
  } catch {
    // Not Linux: fall back to the IANA range's start.
  }
  return 49_152;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
