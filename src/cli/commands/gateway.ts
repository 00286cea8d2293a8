// `tenax gateway`: the command group of the profile's HTTP gateway. `run` serves in the
// foreground until SIGTERM/SIGINT; the service subcommands are added to the same group elsewhere.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { TenaxError, UsageError } from "../../core/errors.js";
import { runGateway } from "../../gateway/run.js";
import { GATEWAY_EXIT_CONFIG_ERROR } from "../../gateway/service/exit-codes.js";
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
 * Serve the profile's gateway in the foreground until SIGTERM or SIGINT: `tenax gateway run` and
 * `tenax up`. A config error exits with the code the service unit does not restart on.
 */
export async function serveGateway(cli: Cli, out: Output, flags: RunFlags): Promise<number> {
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
    info: (line) => out.line(line),
    warn: (line) => out.warn(line),
    secretVariables: loaded.secretVariables,
    onOutputLost: (report) =>
      onStandardStreamLost((name, error) =>
        report(`${name} was closed (${(error as NodeJS.ErrnoException).code ?? error.message})`),
      ),
  });
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isInteger(port) || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535, not "${value}"`);
  return port;
}
