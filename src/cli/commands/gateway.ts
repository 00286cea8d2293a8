// `tenax gateway`: the command group of the profile's HTTP gateway. `run` serves in the
// foreground until SIGTERM/SIGINT; the service subcommands are added to the same group elsewhere.
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { TenaxError } from "../../core/errors.js";
import { parentPipe } from "../../core/parent-pipe.js";
import { runGateway } from "../../gateway/run.js";
import { GATEWAY_EXIT_CONFIG_ERROR } from "../../gateway/service/exit-codes.js";
import { parsePort } from "../../http/listen.js";
import type { GatewayLaunch } from "../../profile/gateway-pid.js";
import { type Cli, VERSION } from "../main.js";
import { type Output, reportError } from "../output.js";
import { onStandardStreamLost } from "../std-streams.js";
import { storeSettings } from "../store-access.js";

export interface RunFlags {
  host?: string;
  port?: string;
}

export function registerGatewayCommands(program: Command, cli: Cli): Command {
  const gateway = program
    .command("gateway")
    .description("the profile's HTTP gateway (OpenAI-compatible API)");
  gateway
    .command("run")
    .description("serve the gateway in the foreground; SIGTERM or SIGINT drain running turns and stop")
    .option("--host <host>", "address to listen on (default: gateway.host in config.yaml)")
    .option("--port <port>", "port to listen on, 0 picks a free one (default: gateway.port in config.yaml)")
    .action((flags: RunFlags) => cli.run(false, (out) => serveGateway(cli, out, flags)));
  return gateway;
}

/**
 * Serve the profile's gateway in the foreground until SIGTERM or SIGINT (`tenax gateway run`, also
 * as a child of `tenax up` or of its systemd unit). Started by up, the end of up's pipe on stdin
 * drains and stops it as SIGTERM does. A config error exits with the code that neither the service
 * unit nor up restarts on.
 */
export async function serveGateway(cli: Cli, out: Output, flags: RunFlags): Promise<number> {
  const pipe = parentPipe();
  try {
    return await serve(cli, out, flags, pipe === null ? undefined : pipe.closed);
  } finally {
    pipe?.release();
  }
}

async function serve(
  cli: Cli,
  out: Output,
  flags: RunFlags,
  upGone: Promise<void> | undefined,
): Promise<number> {
  const port = flags.port === undefined ? undefined : parsePort(flags.port);
  const paths = cli.profile({ create: true });
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(paths);
  } catch (error) {
    // The service unit does not restart a gateway that exits with this code.
    if (TenaxError.isInstance(error) && error.code === "config_invalid") {
      reportError(error, false);
      return GATEWAY_EXIT_CONFIG_ERROR;
    }
    throw error;
  }
  const { config, warnings } = loaded;
  for (const w of warnings) out.warn(w);
  return runGateway({
    paths,
    config,
    keySource: loaded.gatewayKeySource,
    host: flags.host ?? config.gateway.host,
    port: port ?? config.gateway.port,
    version: VERSION,
    storeSettings: storeSettings(config),
    cwd: process.cwd(),
    launch: launchOf(flags, upGone !== undefined),
    ...(upGone === undefined
      ? {}
      : { stopWhen: upGone.then(() => "the pipe from tenax up closed (tenax up is gone)") }),
    info: (line) => out.line(line),
    warn: (line) => out.warn(line),
    secretVariables: loaded.secretVariables,
    onOutputLost: (report) =>
      onStandardStreamLost((name, error) =>
        report(`${name} was closed (${(error as NodeJS.ErrnoException).code ?? error.message})`),
      ),
  });
}

/** How this gateway was started, for the advice a dead gateway's pid file leads to. */
function launchOf(flags: RunFlags, byUp: boolean): GatewayLaunch {
  const args = [
    "gateway",
    "run",
    ...(flags.host === undefined ? [] : ["--host", flags.host]),
    ...(flags.port === undefined ? [] : ["--port", flags.port]),
  ];
  return { started_by: byUp ? "up" : startedBySystemd() ? "systemd" : "run", args };
}

/**
 * A systemd service: systemd sets INVOCATION_ID for it and is its parent. INVOCATION_ID alone is
 * not enough, since a terminal that runs as a user service passes it on to its shells.
 */
function startedBySystemd(): boolean {
  if (process.env.INVOCATION_ID === undefined) return false;
  try {
    return readFileSync(`/proc/${process.ppid}/comm`, "utf8").trim() === "systemd";
  } catch {
    return false;
  }
}
