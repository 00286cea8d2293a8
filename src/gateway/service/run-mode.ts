// How a profile's gateway runs right now, told from what it leaves behind: its pid file (a live
// pid, and how it was started), the state of a live `tenax up`, and its systemd unit where systemd
// can be asked. `tenax gateway status` says which, so a gateway under `tenax up` or started by
// hand is running, not an error of a missing systemd.
import type { GatewayLaunch, GatewayProcess } from "../../profile/gateway-pid.js";
import type { UpState } from "../../profile/up-state.js";
import { isRunning, type UnitState } from "./systemctl.js";

/** Who runs the gateway: tenax up, its systemd unit, a person (`gateway run`), not known, nobody. */
export type RunMode = "up" | "systemd" | "run" | "unknown" | "none";

export interface GatewayRun {
  mode: RunMode;
  /** The gateway's own pid, when a process runs it. */
  pid: number | null;
  /** The live tenax up's pid, when one supervises the gateway. */
  up_pid: number | null;
  /** For people: "under tenax up (pid 7), gateway pid 8". */
  detail: string;
}

export interface RunModeInput {
  unit: string;
  holder: GatewayProcess;
  launch: GatewayLaunch | null;
  up: UpState | null;
  /** null when systemd --user cannot be asked (none on this machine). */
  unitState: UnitState | null;
}

function unitRuns(state: UnitState | null): state is UnitState {
  return state !== null && isRunning(state);
}

export function gatewayRun(input: RunModeInput): GatewayRun {
  const { holder, launch, up, unit, unitState } = input;
  const upPid = up?.pid ?? null;
  if (holder.running && holder.pid !== null) {
    const pid = holder.pid;
    if (launch?.started_by === "up" || (up !== null && up.gateway.pid === pid))
      return {
        mode: "up",
        pid,
        up_pid: upPid,
        detail:
          upPid === null
            ? `gateway pid ${pid}, started by a tenax up that is gone`
            : `under tenax up (pid ${upPid}), gateway pid ${pid}`,
      };
    if (launch?.started_by === "systemd" || (unitRuns(unitState) && unitState.mainPid === pid))
      return {
        mode: "systemd",
        pid,
        up_pid: null,
        detail: `as the systemd unit ${unit}, gateway pid ${pid}`,
      };
    if (launch?.started_by === "run")
      return {
        mode: "run",
        pid,
        up_pid: null,
        detail: `in the foreground (tenax ${launch.args.join(" ")}), gateway pid ${pid}`,
      };
    return {
      mode: "unknown",
      pid,
      up_pid: null,
      detail: `gateway pid ${pid} (how it was started is not recorded)`,
    };
  }
  if (unitRuns(unitState))
    return {
      mode: "systemd",
      pid: unitState.mainPid,
      up_pid: null,
      detail: `as the systemd unit ${unit}, pid ${unitState.mainPid} (it has not written its pid file yet)`,
    };
  if (up !== null)
    return {
      mode: "up",
      pid: null,
      up_pid: up.pid,
      detail: `not running; tenax up (pid ${up.pid}) supervises it (${up.gateway.state})`,
    };
  return { mode: "none", pid: null, up_pid: null, detail: "not running" };
}

/** Whether a process runs the gateway (it may still not answer: starting, or hung). */
export function runs(run: GatewayRun): boolean {
  return run.pid !== null;
}
