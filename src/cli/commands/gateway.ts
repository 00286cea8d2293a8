// `tenax gateway`: the command group of the profile's HTTP gateway. `run` serves in the
// foreground until SIGTERM/SIGINT; the service subcommands are added to the same group elsewhere.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { UsageError } from "../../core/errors.js";
import { runGateway } from "../../gateway/run.js";
import { type Cli, VERSION } from "../main.js";
import { storeSettings } from "../store-access.js";

interface RunFlags {
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
    .action((flags: RunFlags) =>
      cli.run(false, async (out) => {
        const port = flags.port === undefined ? undefined : parsePort(flags.port);
        const paths = cli.profile();
        const { config, warnings } = loadConfig(paths);
        for (const w of warnings) out.warn(w);
        return runGateway({
          paths,
          config,
          host: flags.host ?? config.gateway.host,
          port: port ?? config.gateway.port,
          version: VERSION,
          storeSettings: storeSettings(config),
          cwd: process.cwd(),
          info: (line) => out.line(line),
          warn: (line) => out.warn(line),
        });
      }),
    );
  return gateway;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isInteger(port) || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535, not "${value}"`);
  return port;
}
