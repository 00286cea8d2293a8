// `tenax up`: gateway and dashboard together. The store and configuration are in place; the
// gateway and dashboard arrive with the gateway issue, so for now this says what exists.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { usesBuiltInSimulator } from "../../config/schema.js";
import type { Cli } from "../main.js";
import { withWriter } from "../store-access.js";

export function registerUpCommand(program: Command, cli: Cli): void {
  program
    .command("up")
    .description("run the gateway and dashboard of this profile")
    .action(() =>
      cli.run(false, async (out) => {
        const paths = cli.profile();
        const { config, source } = loadConfig(paths);
        out.line(
          `Tenax profile '${paths.name}' at ${paths.dir} (config: ${source === "file" ? paths.config : "built-in defaults"})`,
        );
        if (usesBuiltInSimulator(config)) {
          out.line(
            "provider: none configured, so the built-in local simulator would answer (set `model` and `providers` in config.yaml for a real one)",
          );
        }
        await withWriter(paths, (store) => {
          const stats = store.stats();
          out.line(
            `store: ${stats.path} is open and writable (${stats.sessions} sessions, ${stats.messages} messages)`,
          );
        });
        out.line(
          `not built yet: the gateway (http://${config.gateway.host}:${config.gateway.port}) and the dashboard (http://${config.dashboard.host}:${config.dashboard.port}).`,
        );
        out.line(
          "What works today: tenax chat, tenax status, tenax checkpoints ..., tenax sessions ..., tenax profile ... (see tenax --help).",
        );
        return 0;
      }),
    );
}
