// `tenax up` (what `npm start` runs): the profile's gateway (`tenax gateway run`) and dashboard
// (`tenax dashboard`) as two independent children that up supervises, so either can die while the
// other stays up and the dashboard can show a dead gateway. The gateway is restarted with backoff
// until a crash loop, and after a config error once the config is edited (the dashboard shows the
// error meanwhile); up.json says what up is doing. SIGTERM or SIGINT drains the gateway, then
// stops the dashboard, and up exits with the gateway's code; if up itself dies, both children see
// its pipe close and stop by themselves (the gateway drains).

import { rmSync } from "node:fs";
import type { Command } from "commander";
import { realSleep, systemClock } from "../../core/deps.js";
import { parsePort } from "../../http/listen.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { readDashboardPidInfo } from "../../profile/dashboard-pid.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { recordSelf } from "../../profile/tenax-process.js";
import { readUpState, type UpState, upStateFile, writeUpState } from "../../profile/up-state.js";
import type { Cli } from "../main.js";
import type { Output } from "../output.js";
import { spawnTenax, type TenaxChild } from "../up/child.js";
import { onceChanged } from "../up/file-change.js";
import { GatewaySupervisor } from "../up/gateway-supervisor.js";
import { RestartPolicy } from "../up/restart-policy.js";
import { REVIVE_SIGNAL, reviveGateway } from "../up/revive.js";

interface UpFlags {
  gatewayHost?: string;
  gatewayPort?: string;
  dashboardHost?: string;
  dashboardPort?: string;
}

/** How long the dashboard gets to stop after SIGTERM before it is killed. */
const DASHBOARD_STOP_MS = 5000;

export function registerUpCommand(program: Command, cli: Cli): void {
  program
    .command("up")
    .description(
      "run this profile's gateway and dashboard as supervised processes (the gateway is restarted if it crashes)",
    )
    .option("--gateway-host <host>", "address the gateway listens on (default: gateway.host)")
    .option(
      "--gateway-port <port>",
      "port the gateway listens on, 0 picks a free one that restarts keep (default: gateway.port)",
    )
    .option("--dashboard-host <host>", "address the dashboard listens on (default: dashboard.host)")
    .option(
      "--dashboard-port <port>",
      "port the dashboard listens on, 0 picks a free one (default: dashboard.port)",
    )
    .action((flags: UpFlags) =>
      cli.run(false, async (out) => {
        if (flags.gatewayPort !== undefined) parsePort(flags.gatewayPort, "--gateway-port");
        if (flags.dashboardPort !== undefined) parsePort(flags.dashboardPort, "--dashboard-port");
        // Its state file goes into the profile's folder before either child has made it.
        const paths = cli.profile({ create: true });
        const running = readUpState(paths);
        if (running !== null) {
          if (Object.values(flags).some((v) => v !== undefined))
            out.warn(`tenax up (pid ${running.pid}) already runs; its own flags stay, these are ignored`);
          return reviveGateway(paths, running, out);
        }
        return supervise(paths, out, flags);
      }),
    );
}

async function supervise(paths: ProfilePaths, out: Output, flags: UpFlags): Promise<number> {
  const clock = systemClock;
  const writer = stateWriter(paths, out);
  let wake: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const policy = new RestartPolicy();
  const gateway = new GatewaySupervisor({
    paths,
    ...(flags.gatewayHost === undefined ? {} : { host: flags.gatewayHost }),
    ...(flags.gatewayPort === undefined ? {} : { port: flags.gatewayPort }),
    policy,
    spawn: (args) => spawnTenax(paths.name, args),
    clock,
    onChange: () => writer.write(snapshot()),
    onGaveUp: () => {
      if (dashboard.state === "running") out.line("tenax up: the dashboard keeps serving, and shows this");
      idle();
    },
    // A gateway that cannot start on its config is started again once the config is edited.
    watchConfig: (changed) => onceChanged([paths.config, paths.env], changed),
    info: (line) => out.line(line),
    warn: (line) => out.warn(line),
  });
  const dashboard: UpState["dashboard"] = {
    pid: null,
    pid_start: null,
    // Where it will serve, from the start (port 0: once it listens, from its pid file).
    host: flags.dashboardHost ?? null,
    port:
      flags.dashboardPort === undefined || flags.dashboardPort === "0" ? null : Number(flags.dashboardPort),
    state: "starting",
    last_exit: null,
  };
  const startedAt = clock.now();
  // Who up is, beyond its pid: readers and a second up trust the file only while this process runs.
  const self = recordSelf();
  const snapshot = (): UpState => ({
    pid: self.pid,
    pid_start: self.start,
    boot_id: self.boot_id,
    started_at: startedAt,
    updated_at: clock.now(),
    gateway: { ...gateway.state },
    dashboard: { ...dashboard },
  });
  // Nothing left to run: the gateway will not restart (a crash loop; after a config error up waits
  // for the config to change) and the dashboard is gone.
  const idle = () => {
    if (gateway.state.gave_up?.reason !== "crash_loop" || dashboard.state !== "stopped") return;
    out.warn("tenax up: neither the gateway nor the dashboard runs any more; stopping");
    wake();
  };

  let stopping = false;
  const onStop = (signal: NodeJS.Signals) => {
    if (stopping) {
      out.line(`tenax up: ${signal} again: the gateway cuts its drain short`);
      gateway.hurry();
      return;
    }
    stopping = true;
    out.line(`tenax up: ${signal}: stopping the gateway (it drains), then the dashboard`);
    wake();
  };
  const onRevive = () => {
    if (!gateway.revive())
      out.line(`tenax up: ${REVIVE_SIGNAL} ignored: the gateway is ${gateway.state.state}`);
  };
  process.on("SIGTERM", onStop);
  process.on("SIGINT", onStop);
  process.on(REVIVE_SIGNAL, onRevive);

  // Written before either child starts, so the first look of the dashboard already finds it.
  writer.write(snapshot());
  await writer.flushed();
  out.line(
    `tenax up (pid ${process.pid}): the gateway and the dashboard of profile '${paths.name}' run as separate processes; a crashed gateway is restarted (state in ${upStateFile(paths)})`,
  );
  gateway.start();
  const serving = () => gateway.state.state === "running" || gateway.state.state === "starting";
  const dashboardChild = startDashboard(paths, out, flags, dashboard, serving, () => {
    writer.write(snapshot());
    idle();
  });
  writer.write(snapshot());

  await done;
  const code = await gateway.stop();
  await stopChild(dashboardChild);
  process.off("SIGTERM", onStop);
  process.off("SIGINT", onStop);
  process.off(REVIVE_SIGNAL, onRevive);
  await writer.close();
  return code;
}

/** `tenax dashboard` for the same profile as a child; it prints its own "listening" line. */
function startDashboard(
  paths: ProfilePaths,
  out: Output,
  flags: UpFlags,
  state: UpState["dashboard"],
  gatewayServing: () => boolean,
  changed: () => void,
): { child: TenaxChild; stopping: boolean } {
  const child = spawnTenax(paths.name, [
    "dashboard",
    ...(flags.dashboardHost === undefined ? [] : ["--host", flags.dashboardHost]),
    ...(flags.dashboardPort === undefined ? [] : ["--port", flags.dashboardPort]),
  ]);
  const handle = { child, stopping: false };
  state.pid = child.pid;
  state.pid_start = child.start;
  // It writes dashboard.pid, with the address it bound, once it listens.
  void (async () => {
    while (child.alive() && state.state === "starting") {
      const listening = readDashboardPidInfo(paths);
      if (listening !== null && listening.pid === child.pid) {
        state.host = listening.host;
        state.port = listening.port;
        state.state = "running";
        changed();
        return;
      }
      await realSleep(100);
    }
  })();
  void child.exited.then((exit) => {
    state.pid = null;
    state.pid_start = null;
    state.state = "stopped";
    state.last_exit = { ...exit, at: Date.now(), clean: exit.code === 0 && exit.signal === null };
    if (!handle.stopping)
      out.warn(
        `the dashboard stopped (${exit.signal ?? `exit ${exit.code}`})${gatewayServing() ? "; the gateway keeps serving" : ""}. Start it again with: ${tenaxCommand(paths.name, ["dashboard"])}`,
      );
    changed();
  });
  return handle;
}

async function stopChild(handle: { child: TenaxChild; stopping: boolean }): Promise<void> {
  handle.stopping = true;
  if (!handle.child.alive()) return;
  handle.child.kill("SIGTERM");
  const timer = setTimeout(() => handle.child.kill("SIGKILL"), DASHBOARD_STOP_MS);
  await handle.child.exited;
  clearTimeout(timer);
}

/** up.json, written in order (each write atomic), and removed when up ends. */
function stateWriter(paths: ProfilePaths, out: Output) {
  let chain: Promise<void> = Promise.resolve();
  let warned = false;
  return {
    write(state: UpState) {
      chain = chain
        .then(() => writeUpState(paths, state))
        .catch((error: unknown) => {
          if (warned) return;
          warned = true;
          out.warn(
            `could not write ${upStateFile(paths)} (${(error as Error).message}): the dashboard and tenax status cannot see what tenax up does`,
          );
        });
    },
    flushed: () => chain,
    async close() {
      await chain;
      rmSync(upStateFile(paths), { force: true });
    },
  };
}
