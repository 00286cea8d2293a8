// `tenax gateway install [--cron-timer]` and `tenax gateway uninstall`: the profile's gateway unit,
// and with --cron-timer a timer that runs `tenax cron tick` every minute, written and enabled;
// uninstall stops, disables and removes whichever of them is there.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { cronTimerNames, renderCronService, renderCronTimer } from "../../gateway/service/cron-timer.js";
import {
  type InstalledUnit,
  installUnits,
  type RemovedUnit,
  type UnitFile,
  uninstallUnits,
  unitFileExists,
} from "../../gateway/service/manage.js";
import type { Systemctl } from "../../gateway/service/systemctl.js";
import { renderUnit, unitDirectory, unitName } from "../../gateway/service/unit.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { Cli } from "../main.js";

export function registerGatewayInstallCommands(
  gateway: Command,
  cli: Cli,
  env: NodeJS.ProcessEnv,
  systemctl: () => Systemctl,
): void {
  gateway
    .command("install")
    .description("install and enable this profile's gateway as a systemd --user unit")
    .option("--cron-timer", "also install a timer that runs `tenax cron tick` every minute")
    .option("--force", "replace different unit files of the same names")
    .option("--json", "print one JSON document")
    .action((flags: { cronTimer?: boolean; force?: boolean; json?: boolean }) =>
      cli.run(flags.json, async (out) => {
        // WorkingDirectory is the profile's folder, which systemd refuses to start in (status
        // 200/CHDIR) while it does not exist: make it now.
        const paths = cli.profile({ create: true });
        const { config, warnings } = loadConfig(paths, env);
        for (const warning of warnings) out.warn(warning);
        const unit = unitName(paths.name);
        const names = cronTimerNames(paths.name);
        const withTimer = flags.cronTimer === true;
        const files: UnitFile[] = [
          { unit, text: renderUnit({ paths, drainTimeoutS: config.gateway.drain_timeout }) },
        ];
        if (withTimer) {
          files.push(
            { unit: names.timer, text: renderCronTimer(paths.name) },
            {
              unit: names.service,
              text: renderCronService({ paths, defaultTimeoutS: config.cron.default_timeout }),
            },
          );
        }
        const installArgs = ["gateway", "install", ...(withTimer ? ["--cron-timer"] : []), "--force"];
        const installed = await installUnits(
          {
            directory: unitDirectory(env),
            files,
            // The service has no [Install] section: the timer starts it. The timer starts now,
            // since an enabled timer that is not started does nothing until the next login.
            enable: withTimer ? [unit, names.timer] : [unit],
            start: withTimer ? [names.timer] : [],
            force: flags.force === true,
            forceCommand: tenaxCommand(paths.name, installArgs),
          },
          systemctl(),
        );
        const [gatewayUnit, timer, service] = installed;
        if (gatewayUnit === undefined) throw new Error("installUnits returned no gateway unit");
        if (out.json) {
          out.document({
            unit,
            path: gatewayUnit.path,
            outcome: gatewayUnit.outcome,
            enabled: true,
            cron_timer:
              timer !== undefined && service !== undefined
                ? { timer: installedJson(timer), service: installedJson(service), started: true }
                : null,
          });
        }
        for (const file of installed) out.line(`${WHAT[file.outcome]} ${file.path}`);
        out.line(`ran systemctl --user daemon-reload and enable ${unit} (it starts at login)`);
        if (withTimer) {
          out.line(
            `enabled and started ${names.timer}: it runs ${tenaxCommand(paths.name, ["cron", "tick"])} every minute`,
          );
          out.line(`see when it runs next with: systemctl --user list-timers ${names.timer}`);
          out.line("a running gateway and the timer may tick together: each occurrence runs once");
        }
        out.line(`start the gateway now: ${tenaxCommand(paths.name, ["gateway", "start"])}`);
        return 0;
      }),
    );

  gateway
    .command("uninstall")
    .description("stop, disable and remove this profile's gateway unit, and its cron timer if there is one")
    .option("--json", "print one JSON document")
    .action((flags: { json?: boolean }) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const unit = unitName(paths.name);
        const names = cronTimerNames(paths.name);
        const directory = unitDirectory(env);
        const hasTimer =
          (await unitFileExists(directory, names.timer)) || (await unitFileExists(directory, names.service));
        // The timer before its service, so it cannot start a tick while the service stops.
        const units = hasTimer ? [unit, names.timer, names.service] : [unit];
        const [gatewayUnit, timer, service] = await uninstallUnits(units, directory, systemctl());
        if (gatewayUnit === undefined) throw new Error("uninstallUnits returned no gateway unit");
        if (out.json) {
          out.document({
            unit,
            path: gatewayUnit.path,
            removed: gatewayUnit.removed,
            cron_timer:
              timer !== undefined && service !== undefined
                ? { timer: removedJson(timer), service: removedJson(service) }
                : null,
          });
        }
        out.line(`stopped and disabled ${units.join(", ")}`);
        for (const file of [gatewayUnit, timer, service]) {
          if (file === undefined) continue;
          out.line(file.removed ? `removed ${file.path}` : `${file.path} was not there`);
        }
        return 0;
      }),
    );
}

const WHAT = { created: "wrote", unchanged: "already up to date:", replaced: "replaced" } as const;

function installedJson(file: InstalledUnit): { unit: string; path: string; outcome: string } {
  return { unit: file.unit, path: file.path, outcome: file.outcome };
}

function removedJson(file: RemovedUnit): { unit: string; path: string; removed: boolean } {
  return { unit: file.unit, path: file.path, removed: file.removed };
}
