// `tenax gateway`: the command group of the profile's HTTP gateway. `run` serves in the
// foreground until SIGTERM/SIGINT; the service subcommands are added to the same group elsewhere.
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { type LoadedConfig, loadConfig } from "../../config/load.js";
import { isConfigError } from "../../core/errors.js";
import { parentPipe } from "../../core/parent-pipe.js";
import { GATEWAY_EXIT_CONFIG_ERROR } from "../../gateway/service/exit-codes.js";
import { parsePort } from "../../http/listen.js";
import type { GatewayLaunch } from "../../profile/gateway-pid.js";
import { checkListenHost, explainBindError, type ListenSettings } from "../listen-settings.js";
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
 * drains and stops it as SIGTERM does. A config error (config.yaml itself, or a gateway.host this
 * machine cannot listen on) exits with the code that neither the service unit nor up restarts on.
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
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig(paths);
  } catch (error) {
    return configExit(error);
  }
  const { config, warnings } = loaded;
  for (const w of warnings) out.warn(w);
  const host = flags.host ?? config.gateway.host;
  const settings: ListenSettings = { section: "gateway", file: paths.config, loaded, flags };
  try {
    // A host that can never be listened on stops the start before it opens anything.
    await checkListenHost(host, "gateway", settings);
  } catch (error) {
    return configExit(error);
  }
  try {
    // Loaded here, not with the command group: `gateway status` and the service verbs need none of it.
    const { runGateway } = await import("../../gateway/run.js");
    return await runGateway({
      paths,
      config,
      keySource: loaded.gatewayKeySource,
      host,
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
  } catch (error) {
    // The port is opened last: what it could not open is told as the setting that gave it. Other
    // errors keep their exit code (a full disk is worth restarting for).
    const explained = explainBindError(error, settings);
    if (explained === error) throw error;
    return configExit(explained);
  }
}

/** Report a config error and exit with the code the service unit and tenax up do not restart on. */
function configExit(error: unknown): number {
  if (!isConfigError(error)) throw error;
  reportError(error, false);
  return GATEWAY_EXIT_CONFIG_ERROR;
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
