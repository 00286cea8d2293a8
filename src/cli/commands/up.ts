// `tenax up`: the profile's long-running service in the foreground. Today that is the gateway
// (the dashboard joins it when it exists); it says what runs and what does not, then serves until
// SIGTERM or SIGINT, exactly as `tenax gateway run` does.
import type { Command } from "commander";
import type { Cli } from "../main.js";
import { serveGateway } from "./gateway.js";

interface UpFlags {
  gatewayHost?: string;
  gatewayPort?: string;
}

export function registerUpCommand(program: Command, cli: Cli): void {
  program
    .command("up")
    .description("run this profile's gateway (and, once built, its dashboard) in the foreground")
    .option("--gateway-host <host>", "address the gateway listens on (default: gateway.host)")
    .option(
      "--gateway-port <port>",
      "port the gateway listens on, 0 picks a free one (default: gateway.port)",
    )
    .action((flags: UpFlags) =>
      cli.run(false, (out) => {
        out.warn("the dashboard is not built yet; `tenax status` shows each layer meanwhile");
        return serveGateway(cli, out, {
          ...(flags.gatewayHost === undefined ? {} : { host: flags.gatewayHost }),
          ...(flags.gatewayPort === undefined ? {} : { port: flags.gatewayPort }),
        });
      }),
    );
}
