// `tenax gateway status`: how the profile's gateway runs (under tenax up, as its systemd unit, in
// the foreground, or not at all) and whether it answers /health/live. Exit 0 running and
// answering, 1 degraded (runs but does not answer, or something else answers), 2 down. A machine
// without systemd is no error here: a gateway under tenax up runs all the same.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import type { TenaxConfig } from "../../config/schema.js";
import { isConfigErrorExit } from "../../gateway/service/exit-codes.js";
import type { LiveProbe, ProbeLive, ProbeTarget } from "../../gateway/service/health-probe.js";
import { type GatewayRun, gatewayRun, runs } from "../../gateway/service/run-mode.js";
import {
  diagnosisCommands,
  type Systemctl,
  type UnitState,
  unitStateIfAvailable,
} from "../../gateway/service/systemctl.js";
import { unitName } from "../../gateway/service/unit.js";
import { gatewayAdvice } from "../../health/gateway-advice.js";
import { gatewayTarget } from "../../health/gateway-status.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { readDashboardPid } from "../../profile/dashboard-pid.js";
import { readGatewayLaunch, readGatewayPid } from "../../profile/gateway-pid.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { readUpState } from "../../profile/up-state.js";
import type { Cli } from "../main.js";

type Status = "ok" | "degraded" | "down";

export function registerGatewayStatusCommand(
  gateway: Command,
  cli: Cli,
  env: NodeJS.ProcessEnv,
  systemctl: () => Systemctl,
  probe: ProbeLive,
): void {
  gateway
    .command("status")
    .description(
      "how the gateway runs (tenax up, its systemd unit, in the foreground) and /health/live: exit 0 running and answering, 1 degraded, 2 down",
    )
    .option("--json", "print one JSON document")
    .action((flags: { json?: boolean }) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const { config } = loadConfig(paths, env);
        const unit = unitName(paths.name);
        const systemd = await unitStateIfAvailable(systemctl(), unit);
        const state = "state" in systemd ? systemd.state : null;
        const up = readUpState(paths);
        const holder = readGatewayPid(paths.pid);
        const launch = readGatewayLaunch(paths.pid);
        const run = gatewayRun({ unit, holder, launch, up, unitState: state });
        const target = probeTarget(paths, config);
        const live = await probe(target, 2_000);
        const running = runs(run);
        const status: Status = running && live.ok ? "ok" : running || live.ok ? "degraded" : "down";
        const unitLine =
          "unavailable" in systemd
            ? `none: ${systemd.unavailable.message}`
            : state?.loadState === "not-found"
              ? `${unit} is not installed`
              : `${unit} ${state?.activeState} (${state?.subState}), pid ${state?.mainPid || "none"}, ${state?.restarts} automatic restart(s), last exit status ${state?.exitStatus}`;
        if (out.json)
          out.document({
            unit,
            status,
            runs: run,
            state,
            systemd:
              "unavailable" in systemd
                ? { available: false, detail: systemd.unavailable.message }
                : { available: true },
            live,
          });
        out.line(`gateway of profile '${paths.name}': ${status}`);
        out.line(`  runs    ${run.detail}`);
        out.line(`  unit    ${unitLine}`);
        out.line(`  health  ${live.detail}`);
        if (state !== null && isConfigErrorExit(state.exitStatus) && !running) {
          out.line(
            `  the gateway last exited with ${state.exitStatus}: a configuration error, so systemd did not restart it`,
          );
          out.line(`next: ${tenaxCommand(paths.name, ["doctor"])}`);
        }
        const next = nextSteps({
          paths,
          unit,
          state,
          run,
          live,
          url: liveUrlOf(target),
          advice: () =>
            gatewayAdvice({
              paths,
              now: Date.now(),
              up,
              holder,
              launch,
              dashboardRunning: up === null && readDashboardPid(paths).running,
            }),
        });
        for (const line of next) out.line(line);
        return status === "ok" ? 0 : status === "degraded" ? 1 : 2;
      }),
    );
}

/** Where the gateway serves: the address its pid file or tenax up records (port 0 too), else config's. */
function probeTarget(paths: ProfilePaths, config: TenaxConfig): ProbeTarget {
  const url = new URL(gatewayTarget(paths, config).url);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port || 80),
    apiKey: config.gateway.api_key,
  };
}

function liveUrlOf(target: ProbeTarget): string {
  return `http://${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
}

interface NextInput {
  paths: ProfilePaths;
  unit: string;
  /** null: no systemd to ask. */
  state: UnitState | null;
  run: GatewayRun;
  live: LiveProbe;
  url: string;
  advice: () => { next: string };
}

function nextSteps(input: NextInput): string[] {
  const { paths, unit, state, run, live } = input;
  const cmd = (args: string[]) => tenaxCommand(paths.name, args);
  const running = runs(run);
  if (running && live.ok) return [];
  if (running) {
    // It runs but does not answer: hung, or still starting.
    if (run.mode === "systemd") return diagnosisCommands(unit).map((command) => `next: ${command}`);
    return [`next: ${input.advice().next}`];
  }
  if (live.ok) {
    const notUnit = state !== null && state.loadState !== "not-found" ? `, but not from ${unit}` : "";
    return [
      `note: a gateway answers${notUnit}, and no gateway of this profile holds its pid file: another profile or program serves ${input.url} (${cmd(["doctor"])} names it); stop it before starting this one`,
    ];
  }
  // Down. What tenax up or a crashed gateway's pid file knows comes first.
  if (run.mode === "up" || readGatewayPid(paths.pid).pid !== null) return [`next: ${input.advice().next}`];
  if (state === null) return [`next: ${cmd(["up"])} (or ${cmd(["gateway", "run"])} in the foreground)`];
  if (state.loadState === "not-found")
    return [`next: ${cmd(["gateway", "install"])} (or ${cmd(["up"])} to run it without the service)`];
  return [`next: ${cmd(["gateway", "start"])}`];
}
