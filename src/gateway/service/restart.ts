// `systemctl --user restart`, then watch until the new gateway is up and stays up: the unit active
// with one main process, /health/live answering, and for a settle period the same MainPID and no
// automatic restarts. Polls until a deadline instead of sleeping a fixed time; retries once.
import type { Clock, Sleep } from "../../core/deps.js";
import { isConfigErrorExit } from "./exit-codes.js";
import type { ProbeLive, ProbeTarget } from "./health-probe.js";
import { isRunning, type Systemctl, type UnitState, unitState } from "./systemctl.js";

export interface RestartOptions {
  unit: string;
  target: ProbeTarget;
  /** How long one attempt may take to come up healthy. */
  timeoutMs: number;
  /** How long the new process must stay the same, healthy process. */
  settleMs: number;
  pollMs: number;
  /** Attempts in all (1 restart plus this many retries). */
  attempts: number;
}

export interface RestartDeps {
  systemctl: Systemctl;
  probe: ProbeLive;
  clock: Clock;
  sleep: Sleep;
  /** Progress for people. */
  note?: (text: string) => void;
}

export interface AttemptResult {
  ok: boolean;
  /** Why it failed, or the pid that stayed up. */
  detail: string;
  state: UnitState | null;
  /** The gateway exited because its configuration is wrong: restarting again cannot help. */
  configError: boolean;
}

export interface RestartResult {
  ok: boolean;
  attempts: AttemptResult[];
}

export async function restartAndVerify(options: RestartOptions, deps: RestartDeps): Promise<RestartResult> {
  const attempts: AttemptResult[] = [];
  for (let i = 0; i < options.attempts; i++) {
    if (i > 0) deps.note?.(`restart attempt ${i} failed (${attempts[i - 1]?.detail}); retrying once`);
    // A start job that fails outright (say, ExecStart no longer exists) is a failed attempt too;
    // the unit's state still tells whether it was a configuration error.
    const command = await deps.systemctl(["restart", options.unit]);
    const said = command.stderr.trim().split("\n")[0] || `exit ${command.code}`;
    const result = await watchAttempt(
      command.code === 0 ? null : `systemctl restart failed: ${said}`,
      options,
      deps,
    );
    attempts.push(result);
    if (result.ok) return { ok: true, attempts };
    if (result.configError) break;
  }
  return { ok: false, attempts };
}

async function watchAttempt(
  commandFailed: string | null,
  options: RestartOptions,
  deps: RestartDeps,
): Promise<AttemptResult> {
  const deadline = deps.clock.now() + options.timeoutMs;
  const probeTimeout = Math.max(200, Math.min(2_000, options.pollMs * 4));
  let baseline: UnitState | null = null;
  let healthy: { pid: number; since: number } | null = null;
  let last: UnitState | null = null;
  let lastProblem = "the unit did not become active";

  for (;;) {
    const state = await unitState(deps.systemctl, options.unit);
    last = state;
    baseline ??= state;
    if (state.restarts > baseline.restarts) {
      return fail(
        `systemd restarted it ${state.restarts - baseline.restarts} time(s): the process keeps exiting`,
        state,
      );
    }
    if (state.activeState === "failed" && isConfigErrorExit(state.exitStatus)) {
      const detail = `the gateway exited with ${state.exitStatus}: its configuration is wrong`;
      return { ok: false, detail, state, configError: true };
    }
    if (state.activeState === "failed")
      return fail(`the unit failed (exit status ${state.exitStatus})`, state);
    if (commandFailed !== null) return fail(commandFailed, state);
    if (healthy !== null && state.mainPid !== healthy.pid) {
      return fail(
        `the process ${healthy.pid} did not stay up (main pid now ${state.mainPid || "none"})`,
        state,
      );
    }
    if (isRunning(state)) {
      const live = await deps.probe(options.target, probeTimeout);
      if (live.ok) {
        const now = deps.clock.now();
        healthy ??= { pid: state.mainPid, since: now };
        if (now - healthy.since >= options.settleMs) {
          return {
            ok: true,
            detail: `pid ${state.mainPid} is up and /health/live answers`,
            state,
            configError: false,
          };
        }
      } else {
        if (healthy !== null) return fail(`the process stopped answering: ${live.detail}`, state);
        lastProblem = `the unit is active but ${live.detail}`;
      }
    } else {
      lastProblem = `the unit is ${state.activeState} (${state.subState})`;
    }
    if (deps.clock.now() >= deadline) {
      return fail(`not healthy within ${Math.round(options.timeoutMs / 100) / 10} s: ${lastProblem}`, last);
    }
    await deps.sleep(options.pollMs);
  }

  function fail(detail: string, state: UnitState | null): AttemptResult {
    return { ok: false, detail, state, configError: false };
  }
}
