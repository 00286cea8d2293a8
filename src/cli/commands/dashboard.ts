// `tenax dashboard [--host H] [--port P]`: the profile's web page in the foreground, serving until
// SIGTERM or SIGINT. It reads the store, writes only its logins there, and probes the gateway; it
// runs whether or not the gateway does, which is the point: it shows when the gateway is down.
import type { Command } from "commander";
import { openAuditTrail } from "../../agent/audit-trail.js";
import { LiveConfig } from "../../config/live-config.js";
import { parentPipe } from "../../core/parent-pipe.js";
import { buildDashboardApp } from "../../dashboard/app.js";
import { Dashboard } from "../../dashboard/server.js";
import { storeWhere } from "../../dashboard/store-view.js";
import { closeApp, listen, parsePort, urlHost } from "../../http/listen.js";
import { removeDashboardPid, writeDashboardPid } from "../../profile/dashboard-pid.js";
import { configuredPorts } from "../../profile/ports.js";
import { openProfileStore } from "../../store/registry.js";
import { checkListenHost, explainBindError, type ListenSettings } from "../listen-settings.js";
import { type Cli, VERSION } from "../main.js";
import { type Output, reportError } from "../output.js";
import { storeSettings } from "../store-access.js";
import { announceLogin, checkExposure, dashboardBase, registerDashboardLogins } from "./dashboard-logins.js";

export interface DashboardFlags {
  host?: string;
  port?: string;
}

export function registerDashboardCommand(program: Command, cli: Cli): void {
  const command = program
    .command("dashboard")
    .description("serve this profile's dashboard (layers, gateway, sessions, events) until SIGTERM or SIGINT")
    .option("--host <host>", "address to listen on (default: dashboard.host in config.yaml)")
    .option("--port <port>", "port to listen on, 0 picks a free one (default: dashboard.port in config.yaml)")
    .action((flags: DashboardFlags) => cli.run(false, (out) => serveDashboard(cli, out, flags)));
  registerDashboardLogins(command, cli);
}

export async function serveDashboard(cli: Cli, out: Output, flags: DashboardFlags): Promise<number> {
  // Started by `tenax up`: stop when up's pipe to our stdin closes (up is gone, even by kill -9).
  const pipe = parentPipe();
  try {
    return await serve(cli, out, flags, pipe?.closed);
  } finally {
    pipe?.release();
  }
}

async function serve(
  cli: Cli,
  out: Output,
  flags: DashboardFlags,
  upGone: Promise<void> | undefined,
): Promise<number> {
  const port = flags.port === undefined ? undefined : parsePort(flags.port, "--port");
  const paths = cli.profile();
  // A config that does not load is shown on the page (its config tile), not a reason to stop: the
  // dashboard serves on, with the last config that loaded (at first the defaults), and picks up
  // the fixed one. Under tenax up the gateway prints the config's errors and warnings; printed
  // here too, each would be said twice.
  const live = new LiveConfig(paths);
  const problem = live.problem;
  const underUp = upGone !== undefined;
  if (!underUp) {
    for (const w of live.lastLoaded?.warnings ?? []) out.warn(w);
    if (problem !== null) {
      reportError(problem, false);
      out.warn(
        "the dashboard serves anyway, on the defaults, and shows this error until config.yaml is fixed",
      );
    }
  }
  const config = live.current();
  const host = flags.host ?? config.dashboard.host;
  // The port config.yaml asks for, read leniently while the file as a whole does not load.
  const configuredPort =
    problem === null
      ? config.dashboard.port
      : (configuredPorts(paths.config).dashboard ?? config.dashboard.port);
  const loaded = live.lastLoaded;
  const settings: ListenSettings = { section: "dashboard", file: paths.config, loaded, flags };
  // First whether it can listen there at all: a name that does not resolve is that, not a refusal.
  await checkListenHost(host, "dashboard", settings);
  checkExposure(host, config, flags, loaded, out);
  let at: { host: string; port: number } | null = null;
  const dashboard = new Dashboard({
    paths,
    config: () => live.current(),
    version: VERSION,
    openStore: () => openProfileStore(paths, storeSettings(live.current())),
    audit: openAuditTrail(paths, config.logs, {
      source: "dashboard",
      onFailure: (message) => out.warn(message),
    }),
    listening: () => at,
  });
  const app = buildDashboardApp(dashboard);
  const stopSignal = new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
    void upGone?.then(() => resolve("tenax up stopped"));
  });
  const bound = await listen(app, host, port ?? configuredPort, {
    name: "dashboard",
    hint: "stop what uses it, or choose another port with --port P (or dashboard.port in config.yaml)",
  }).catch((error: unknown) => {
    throw explainBindError(error, settings);
  });
  at = { host, port: bound };
  dashboard.start();
  // `tenax doctor` tells this dashboard on its port from a stranger by this file.
  await writeDashboardPid(paths, { pid: process.pid, started_at: Date.now(), host, port: bound }).catch(
    (error: unknown) =>
      out.warn(
        `could not write the dashboard's pid file (${(error as Error).message}): tenax doctor will count its port as another program's`,
      ),
  );
  out.line(`dashboard listening on http://${urlHost(host)}:${bound}`);
  // Making the link opens the store, which may wait up to its retry budget for another process's
  // lock: a stop meanwhile is not held up by it.
  let announcing = true;
  const announced = announceLogin(dashboard, out, dashboardBase(config, host, bound)).finally(() => {
    announcing = false;
  });
  await Promise.race([announced, stopSignal]);
  const { url, source } = dashboard.probe.current;
  out.line(
    `dashboard: probing the gateway at ${url} (${PROBE_SOURCE[source]}); reading ${storeWhere(paths)} (it writes only logins)`,
  );
  const why = await stopSignal;
  removeDashboardPid(paths, process.pid);
  await dashboard.stop();
  await closeApp(app);
  out.line(`dashboard stopped (${why})`);
  // Stopped while the store was still being opened for the link: its retries would keep the
  // process alive for up to their budget, with nothing left to do.
  if (announcing) process.exit(0);
  return 0;
}

/** Where the first probe's address came from: a port picked at start (0) is known only once bound. */
const PROBE_SOURCE = {
  pid_file: "as its pid file says",
  up: "as tenax up starts it",
  config: "config.yaml's gateway.port, until its pid file says where it listens",
} as const;
