// What to tell someone whose gateway does not answer, for the way it was started: under a live
// `tenax up` (it is restarting: wait; it gave up: fix what the log shows and run tenax up again), as
// the systemd service (tenax gateway restart), or by hand (the command that started it). One
// answer for `tenax status` and the dashboard's banner, each command exactly as it must be typed.
import { join } from "node:path";
import { commandLine } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { GatewayLaunch, GatewayProcess } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { describeExit, formatWindow, type UpState } from "../profile/up-state.js";

export interface GatewayAdvice {
  /** Who starts the gateway: a live tenax up, its systemd unit, a person, or not known. */
  manager: "up" | "systemd" | "run" | "unknown";
  /** What is going on, without the probe's own error (the caller has that). */
  situation: string;
  /** What to do; `command` appears in it, after a colon where it ends the text. */
  next: string;
  /** The one command of `next`, runnable exactly as printed. */
  command: string;
}

export interface AdviceInput {
  paths: ProfilePaths;
  now: number;
  /** The state of the profile's live `tenax up`, or null when none runs. */
  up: UpState | null;
  /** The gateway's pid file: which pid, alive or not, and how it was started. */
  holder: GatewayProcess;
  launch: GatewayLaunch | null;
  /** A dashboard of this profile runs outside any tenax up (then `tenax up` would find its port taken). */
  dashboardRunning: boolean;
}

/** Advice for a gateway that does not answer. */
export function gatewayAdvice(input: AdviceInput): GatewayAdvice {
  const { paths, up, holder, launch } = input;
  if (up !== null) return underUp(input, up);
  const cmd = (args: string[]) => tenaxCommand(paths.name, args);
  // Without a tenax up, `tenax up` would start a second dashboard on a port that one already holds.
  const start = input.dashboardRunning ? cmd(["gateway", "run"]) : cmd(["up"]);
  const service = cmd(["gateway", "start"]);
  if (holder.running) {
    const pid = holder.pid;
    if (launch?.started_by === "systemd") {
      const restart = cmd(["gateway", "restart"]);
      return {
        manager: "systemd",
        situation: `the service's gateway process ${pid} holds the pid file but does not answer: hung or still starting`,
        next: `if it stays so, run: ${restart}`,
        command: restart,
      };
    }
    const again = launch === null ? start : cmd(launch.args);
    return {
      manager: launch === null ? "unknown" : "run",
      situation: `process ${pid} holds the gateway's pid file but does not answer: hung or still starting`,
      next: `${cmd(["gateway", "restart"])} for the service, else stop pid ${pid} (kill ${pid}) and run: ${again}`,
      command: again,
    };
  }
  if (holder.pid !== null) {
    const crashed = `not running: gateway pid ${holder.pid} is gone without a clean stop (a crash)`;
    if (launch?.started_by === "systemd") {
      const restart = cmd(["gateway", "restart"]);
      return {
        manager: "systemd",
        situation: `${crashed}; systemd starts the service again by itself (Restart=on-failure) unless it failed too often`,
        next: `if it stays down, run: ${restart}`,
        command: restart,
      };
    }
    if (launch?.started_by === "run") {
      const again = cmd(launch.args);
      return {
        manager: "run",
        situation: crashed,
        next: `start it again as it was started; its turns are resumed on start: ${again}`,
        command: again,
      };
    }
    return {
      manager: "unknown",
      situation:
        launch?.started_by === "up" ? `${crashed}, and the tenax up that ran it is gone too` : crashed,
      next: `${start} (or ${service} for the service); its turns are resumed on start`,
      command: start,
    };
  }
  return {
    manager: "unknown",
    situation: "not running",
    next: `${start} (or ${service} for the service)`,
    command: start,
  };
}

function underUp(input: AdviceInput, up: UpState): GatewayAdvice {
  const { paths, now, holder } = input;
  const g = up.gateway;
  const status = tenaxCommand(paths.name, ["status"]);
  const again = tenaxCommand(paths.name, ["up"]);
  const by = `tenax up (pid ${up.pid})`;
  const last =
    g.last_exit === null ? "" : `the gateway ${describeExit(g.last_exit)} ${ago(now, g.last_exit.at)}`;
  const window = formatWindow(g.window_ms);
  const wait = {
    manager: "up" as const,
    next: `wait: ${by} starts it by itself; to follow it, run: ${status}`,
    command: status,
  };
  switch (g.state) {
    case "restarting": {
      const seconds = Math.max(0, Math.ceil(((g.next_restart_at ?? now) - now) / 1000));
      return {
        ...wait,
        situation: `${last}; ${by} restarts it in ${seconds} s (restart ${g.restarts + 1}; ${g.unclean_exits} unclean exit(s) within ${window}, it gives up at ${g.max_unclean_exits})`,
      };
    }
    case "starting":
      return {
        ...wait,
        situation: `${by} is starting the gateway${g.pid === null ? "" : ` (pid ${g.pid})`}${g.restarts > 0 ? ` again (restart ${g.restarts}${last ? `; ${last}` : ""})` : ""}`,
      };
    case "running": {
      if (!holder.running || holder.pid !== g.pid)
        return { ...wait, situation: `gateway pid ${g.pid} is gone; ${by} is about to restart it` };
      const kill = commandLine(["kill", String(g.pid)]);
      return {
        manager: "up",
        situation: `the gateway (pid ${g.pid}, run by ${by}) holds its pid file but does not answer: hung or still starting`,
        next: `wait a few seconds; if it stays so, stop it and tenax up starts a new one: ${kill}`,
        command: kill,
      };
    }
    case "gave_up":
      if (g.gave_up?.reason === "config_error") {
        const doctor = tenaxCommand(paths.name, ["doctor"]);
        return {
          manager: "up",
          situation: `the gateway cannot start on its configuration (exit ${g.last_exit?.code ?? "?"}); ${by} starts it again once ${paths.config} or ${paths.env} changes`,
          next: `fix ${paths.config} (the config layer shows the error, with its line); to see it again, run: ${doctor}`,
          command: doctor,
        };
      }
      return {
        manager: "up",
        situation: `${by} gave up restarting the gateway after ${g.unclean_exits} unclean exits within ${window} (a crash loop); ${last}`,
        next: `fix what ${join(paths.logs, "gateway.log")} shows, then run: ${again}`,
        command: again,
      };
    case "stopping":
      return {
        manager: "up",
        situation: `${by} is stopping`,
        next: `once it has stopped, start it again with: ${again}`,
        command: again,
      };
    default: {
      const never: never = g.state;
      throw new Error(`unknown gateway state ${String(never)}`);
    }
  }
}

function ago(now: number, at: number): string {
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  return seconds < 120 ? `${seconds} s ago` : `${Math.round(seconds / 60)} min ago`;
}
