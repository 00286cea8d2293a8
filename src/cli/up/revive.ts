// `tenax up` while another `tenax up` already runs for the profile: after that one gave up on its
// gateway (a crash loop, a config error), this asks it (SIGUSR2) to start the gateway again and
// waits to see it serve or fail, which is what "fix what the log shows, then run: tenax up" means
// while the first up keeps the dashboard open. Any other state is a refusal: one up per profile.
import { join } from "node:path";
import { realSleep, type Sleep } from "../../core/deps.js";
import { TenaxError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { describeExit, readUpState, type UpState } from "../../profile/up-state.js";
import type { Output } from "../output.js";

/** The signal that asks a `tenax up` to start its gateway again after giving up. */
export const REVIVE_SIGNAL: NodeJS.Signals = "SIGUSR2";

export interface ReviveOptions {
  sleep?: Sleep;
  /** How long to wait for the gateway to serve (default 60 s). */
  timeoutMs?: number;
}

export async function reviveGateway(
  paths: ProfilePaths,
  running: UpState,
  out: Output,
  options: ReviveOptions = {},
): Promise<number> {
  const sleep = options.sleep ?? realSleep;
  const up = running.pid;
  if (running.gateway.state !== "gave_up")
    throw new TenaxError(
      "up_running",
      `tenax up already runs for profile ${paths.name} (pid ${up}); its gateway is ${running.gateway.state}${running.gateway.pid === null ? "" : ` (pid ${running.gateway.pid})`}`,
      {
        hint: `see every layer with ${tenaxCommand(paths.name, ["status"])}; to start it afresh, stop it first (kill ${up})`,
      },
    );
  const before = running.gateway.restarts;
  // Checked again right before the signal (pid, start time, this Tenax's `up`): SIGUSR2 would end
  // any other process that got the pid meanwhile.
  const still = readUpState(paths);
  if (still === null || still.pid !== up || still.pid_start !== running.pid_start)
    throw new TenaxError(
      "up_gone",
      `tenax up (pid ${up}) stopped before it could be asked to start the gateway`,
      {
        hint: `start it again with ${tenaxCommand(paths.name, ["up"])}`,
      },
    );
  process.kill(up, REVIVE_SIGNAL);
  out.line(`asked tenax up (pid ${up}), which had given up on the gateway, to start it again`);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    await sleep(200);
    const now = readUpState(paths);
    if (now === null)
      throw new TenaxError("up_gone", `tenax up (pid ${up}) stopped before the gateway was back`, {
        hint: `start it again with ${tenaxCommand(paths.name, ["up"])}`,
      });
    const g = now.gateway;
    if (g.restarts <= before) continue;
    if (g.state === "running") {
      out.line(`the gateway serves again (pid ${g.pid}, port ${g.port}) under tenax up (pid ${up})`);
      return 0;
    }
    if (g.state === "gave_up")
      throw new TenaxError(
        "gateway_failed_again",
        `the gateway did not stay up: it ${g.last_exit === null ? "exited" : describeExit(g.last_exit)}${g.gave_up?.reason === "config_error" ? " (a config error)" : ""}, and tenax up (pid ${up}) gave up on it again`,
        {
          hint: `see what ${join(paths.logs, "gateway.log")} shows, fix it, then run ${tenaxCommand(paths.name, ["up"])} again`,
        },
      );
  }
  throw new TenaxError(
    "gateway_not_back",
    `the gateway is not serving ${Math.round((options.timeoutMs ?? 60_000) / 1000)} s after tenax up (pid ${up}) was asked to start it`,
    { hint: `see ${tenaxCommand(paths.name, ["status"])} and ${join(paths.logs, "gateway.log")}` },
  );
}
