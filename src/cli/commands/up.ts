// `tenax up`: the profile's long-running services. The gateway serves in the foreground (as
// `tenax gateway run`); the dashboard runs as a child process (`tenax dashboard`), so either can
// die while the other stays up, and the dashboard can show a dead gateway. SIGTERM or SIGINT
// drains the gateway and then stops the dashboard.
import { type ChildProcess, spawn } from "node:child_process";
import type { Command } from "commander";
import { tenaxCommand } from "../../config/command-hint.js";
import type { Cli } from "../main.js";
import type { Output } from "../output.js";
import { PARENT_PIPE_ENV, parsePort } from "./dashboard.js";
import { serveGateway } from "./gateway.js";

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
    .description("run this profile's gateway in the foreground and its dashboard beside it")
    .option("--gateway-host <host>", "address the gateway listens on (default: gateway.host)")
    .option(
      "--gateway-port <port>",
      "port the gateway listens on, 0 picks a free one (default: gateway.port)",
    )
    .option("--dashboard-host <host>", "address the dashboard listens on (default: dashboard.host)")
    .option(
      "--dashboard-port <port>",
      "port the dashboard listens on, 0 picks a free one (default: dashboard.port)",
    )
    .action((flags: UpFlags) =>
      cli.run(false, async (out) => {
        if (flags.dashboardPort !== undefined) parsePort(flags.dashboardPort, "--dashboard-port");
        const dashboard = startDashboard(cli, out, flags);
        try {
          return await serveGateway(cli, out, {
            ...(flags.gatewayHost === undefined ? {} : { host: flags.gatewayHost }),
            ...(flags.gatewayPort === undefined ? {} : { port: flags.gatewayPort }),
          });
        } finally {
          await dashboard.stop();
        }
      }),
    );
}

/** `tenax dashboard` for the same profile as a child; it prints its own "listening" line. */
function startDashboard(cli: Cli, out: Output, flags: UpFlags): { stop(): Promise<void> } {
  const profile = cli.profile().name;
  const args = [
    ...process.execArgv,
    process.argv[1] ?? "tenax",
    "--profile",
    profile,
    "dashboard",
    ...(flags.dashboardHost === undefined ? [] : ["--host", flags.dashboardHost]),
    ...(flags.dashboardPort === undefined ? [] : ["--port", flags.dashboardPort]),
  ];
  let stopping = false;
  const child: ChildProcess = spawn(process.execPath, args, {
    // Our end of its stdin closes when this process dies in any way, and the dashboard follows.
    stdio: ["pipe", "inherit", "inherit"],
    env: { ...process.env, [PARENT_PIPE_ENV]: "1" },
  });
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      if (!stopping)
        out.warn(
          `the dashboard stopped (${signal ?? `exit ${code}`}); the gateway keeps serving. Start it again with: ${tenaxCommand(profile, ["dashboard"])}`,
        );
      resolve();
    }),
  );
  child.once("error", (error) => out.warn(`the dashboard could not start: ${error.message}`));
  return {
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), DASHBOARD_STOP_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
