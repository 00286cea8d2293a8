// `tenax profile create|list|show|delete`: thin wrappers over src/config/profiles.ts that print for
// people, or one JSON document with --json.
import type { Command } from "commander";
import {
  createProfile,
  deleteProfile,
  listProfiles,
  type ProfileInfo,
  showProfile,
} from "../../config/profiles.js";
import { UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { DEFAULT_PROFILE } from "../../profile/paths.js";
import type { Cli } from "../main.js";
import { table } from "../output.js";

interface JsonFlag {
  json?: boolean;
}

export function registerProfileCommands(program: Command, cli: Cli): void {
  const profile = program.command("profile").description("create, list, show or delete profiles");

  profile
    .command("create <name>")
    .description("create a profile with its own config, store and ports")
    .option("--json", "print one JSON document")
    .action((name: string, opts: JsonFlag) =>
      cli.run(opts.json, async (out) => {
        const info = await createProfile(cli.profile().home, name);
        if (out.json) {
          out.document({ profile: info });
          return 0;
        }
        out.line(`created profile ${name} in ${info.dir}`);
        out.line(`  gateway port ${info.gateway_port}, dashboard port ${info.dashboard_port}`);
        out.line(`  edit ${info.config_file} to configure it; run it with: ${tenaxCommand(name, ["up"])}`);
        return 0;
      }),
    );

  profile
    .command("list")
    .description("list profiles with their ports and gateway state")
    .option("--json", "print one JSON document")
    .action((opts: JsonFlag) =>
      cli.run(opts.json, (out) => {
        const current = cli.profile();
        const profiles = listProfiles(current.home);
        if (out.json) {
          out.document({ current: current.name, profiles });
          return 0;
        }
        const rows = profiles.map((p) => [
          `${p.name === current.name ? "*" : " "} ${p.name}`,
          portText(p.gateway_port),
          portText(p.dashboard_port),
          p.config_exists ? "yes" : "no (defaults)",
          gatewayText(p),
          p.dir,
        ]);
        out.line(table(["  PROFILE", "GATEWAY", "DASHBOARD", "CONFIG", "GATEWAY STATE", "DIR"], rows));
        return 0;
      }),
    );

  profile
    .command("show [name]")
    .description("show a profile's folder, state and effective config (secrets hidden)")
    .option("--json", "print one JSON document")
    .action((name: string | undefined, opts: JsonFlag) =>
      cli.run(opts.json, (out) => {
        const current = cli.profile();
        const details = showProfile(current.home, name ?? current.name);
        const status = details.config_error ? 1 : 0;
        if (out.json) {
          out.document({ profile: details });
          return status;
        }
        out.line(`profile ${details.name}${details.is_default ? " (default)" : ""}`);
        out.line(`  dir        ${details.dir}`);
        out.line(
          `  config     ${details.config_file}${details.config_exists ? "" : " (missing: defaults apply)"}`,
        );
        out.line(`  .env       ${details.env_file}${details.env_exists ? "" : " (none)"}`);
        out.line(`  store      ${details.state_file}${details.state_exists ? "" : " (not created yet)"}`);
        const configured = details.configured_ports;
        out.line(
          `  gateway    port ${portText(details.gateway_port, configured.gateway)}, ${gatewayText(details)}`,
        );
        out.line(`  dashboard  port ${portText(details.dashboard_port, configured.dashboard)}`);
        if (details.uses_simulator) out.line("  model      the built-in simulator (no provider configured)");
        else if (details.config?.model) {
          out.line(
            `  model      ${details.config.model.name} from provider ${details.config.model.provider}`,
          );
        }
        for (const warning of details.warnings) out.warn(warning);
        if (details.config_error) {
          out.line("  config is invalid:");
          for (const line of details.config_error.message.split("\n")) out.line(`    ${line}`);
          if (details.config_error.hint) out.line(`  ${details.config_error.hint}`);
        }
        return status;
      }),
    );

  profile
    .command("delete <name>")
    .description("delete a profile and everything in its folder")
    .option("--yes", "confirm the deletion")
    .option("--json", "print one JSON document")
    .action((name: string, opts: JsonFlag & { yes?: boolean }) =>
      cli.run(opts.json, async (out) => {
        const home = cli.profile().home;
        if (!opts.yes) {
          const args = ["profile", "delete", name, "--yes", ...(opts.json ? ["--json"] : [])];
          throw new UsageError(
            `deleting profile ${name} removes its folder with its sessions, logs and cron jobs; it needs confirmation`,
            { hint: `to confirm, run: ${tenaxCommand(DEFAULT_PROFILE, args)}` },
          );
        }
        const info = await deleteProfile(home, name);
        if (out.json) {
          out.document({ deleted: info.name, dir: info.dir });
          return 0;
        }
        out.line(`deleted profile ${name} (${info.dir})`);
        return 0;
      }),
    );
}

/** The port, and config.yaml's when what runs serves elsewhere (tenax up --gateway-port, --port 0). */
function portText(port: number | null, configured?: number | null): string {
  const text = port === null ? "?" : String(port);
  return configured === undefined || configured === port
    ? text
    : `${text} (config.yaml: ${portText(configured)})`;
}

function gatewayText(p: ProfileInfo): string {
  if (p.gateway_running) return `running (pid ${p.gateway_pid})`;
  if (p.gateway_pid !== null) return `stopped (stale pid ${p.gateway_pid})`;
  return "stopped";
}
