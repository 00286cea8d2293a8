// `tenax gateway install|uninstall|start|stop|restart|status`: the profile's gateway as a
// systemd --user unit (see src/gateway/service; install and uninstall are in gateway-install.ts,
// status, which also knows a gateway run without the unit, in gateway-status.ts); restart says so
// only once the new process has stayed up.

import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { type Clock, realSleep, type Sleep, systemClock } from "../../core/deps.js";
import { TenaxError, UsageError } from "../../core/errors.js";
import { type ProbeLive, type ProbeTarget, probeLive } from "../../gateway/service/health-probe.js";
import { restartAndVerify } from "../../gateway/service/restart.js";
import {
  createSystemctl,
  diagnosisCommands,
  type Systemctl,
  systemctlOk,
  unitState,
} from "../../gateway/service/systemctl.js";
import { unitName } from "../../gateway/service/unit.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { markRestartRequested } from "../../profile/restart-marker.js";
import type { Cli } from "../main.js";
import { registerGatewayInstallCommands } from "./gateway-install.js";
import { registerGatewayStatusCommand } from "./gateway-status.js";

/** What tests replace; production uses the process environment, the real clock and fetch. */
export interface GatewayServiceDeps {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  sleep?: Sleep;
  probe?: ProbeLive;
}

export function registerGatewayServiceCommands(
  gateway: Command,
  cli: Cli,
  deps: GatewayServiceDeps = {},
): void {
  const env = deps.env ?? process.env;
  const probe = deps.probe ?? probeLive;
  const systemctl = (): Systemctl => createSystemctl(env);

  const context = () => {
    const paths = cli.profile();
    const { config, warnings } = loadConfig(paths, env);
    const target: ProbeTarget = {
      host: config.gateway.host,
      port: config.gateway.port,
      apiKey: config.gateway.api_key,
    };
    return { paths, config, warnings, unit: unitName(paths.name), target };
  };

  registerGatewayInstallCommands(gateway, cli, env, systemctl);

  for (const verb of ["start", "stop"] as const) {
    gateway
      .command(verb)
      .description(`${verb} this profile's gateway unit (systemctl --user ${verb})`)
      .action(() =>
        cli.run(false, async (out) => {
          const paths = cli.profile();
          const unit = unitName(paths.name);
          await requireInstalled(systemctl(), unit, paths.name);
          await systemctlOk(systemctl(), [verb, unit]);
          out.line(`${verb === "start" ? "started" : "stopped"} ${unit}`);
          if (verb === "start") out.line(`check it: ${tenaxCommand(paths.name, ["gateway", "status"])}`);
          return 0;
        }),
      );
  }

  registerGatewayStatusCommand(gateway, cli, env, systemctl, probe);

  gateway
    .command("restart")
    .description("restart the gateway unit and wait until the new process is up and stays up")
    .option("--timeout <seconds>", "how long to wait for it to come up, per attempt", "15")
    .option("--settle <seconds>", "how long the new process must stay up", "2")
    .action((flags: { timeout: string; settle: string }) =>
      cli.run(false, async (out) => {
        const timeoutMs = seconds(flags.timeout, "--timeout") * 1000;
        const settleMs = seconds(flags.settle, "--settle") * 1000;
        const { paths, unit, target } = context();
        const ctl = systemctl();
        await requireInstalled(ctl, unit, paths.name);
        // The stopping gateway tells its chats it is restarting, not shutting down.
        markRestartRequested(paths);
        const result = await restartAndVerify(
          { unit, target, timeoutMs, settleMs, pollMs: 250, attempts: 2 },
          {
            systemctl: ctl,
            probe,
            clock: deps.clock ?? systemClock,
            sleep: deps.sleep ?? realSleep,
            note: (text) => out.line(text),
          },
        );
        const lastAttempt = result.attempts.at(-1);
        if (result.ok) {
          out.line(`restarted ${unit}: ${lastAttempt?.detail ?? "up"}`);
          return 0;
        }
        printDiagnosis(unit, lastAttempt?.detail ?? "it did not come up", result.attempts.length);
        if (lastAttempt?.configError) {
          process.stderr.write(`Check the configuration with: ${tenaxCommand(paths.name, ["doctor"])}\n`);
        }
        return 1;
      }),
    );
}

function printDiagnosis(unit: string, detail: string, attempts: number): void {
  const tries = attempts === 1 ? "one restart" : `${attempts} restarts`;
  process.stderr.write(`error: the gateway did not stay up after ${tries}: ${detail}\n`);
  process.stderr.write("See why with:\n");
  for (const command of diagnosisCommands(unit)) process.stderr.write(`  ${command}\n`);
}

async function requireInstalled(systemctl: Systemctl, unit: string, profile: string): Promise<void> {
  const state = await unitState(systemctl, unit);
  if (state.loadState === "not-found") {
    throw new TenaxError("unit_not_installed", `${unit} is not installed`, {
      hint: `Install it with: ${tenaxCommand(profile, ["gateway", "install"])}`,
    });
  }
}

function seconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0)
    throw new UsageError(`${flag} expects a number of seconds, got ${JSON.stringify(value)}`);
  return n;
}
