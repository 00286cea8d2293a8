// `tenax init [--force]`: write the commented config.yaml for the selected profile.
import type { Command } from "commander";
import { initConfig } from "../../config/init-config.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { Cli } from "../main.js";

export function registerInitCommand(program: Command, cli: Cli): void {
  program
    .command("init")
    .description("write a commented config.yaml for the selected profile")
    .option("--force", "replace an existing config.yaml (the old one is kept as config.yaml.bak)")
    .option("--json", "print one JSON document")
    .action((opts: { force?: boolean; json?: boolean }) =>
      cli.run(opts.json, async (out) => {
        const paths = cli.profile();
        const result = await initConfig(paths, { force: opts.force === true });
        if (out.json) {
          out.document(result);
          return 0;
        }
        out.line(`wrote ${result.config_file}`);
        if (result.backup_file) out.line(`  the previous config is saved as ${result.backup_file}`);
        out.line(`  gateway port ${result.gateway_port}, dashboard port ${result.dashboard_port}`);
        out.line("  no provider is configured yet, so Tenax will use its built-in simulator;");
        out.line("  the file shows how to point it at a real OpenAI-compatible API");
        out.line(`  start it with: ${tenaxCommand(paths.name, ["up"])}`);
        return 0;
      }),
    );
}
