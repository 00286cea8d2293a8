import { describe, expect, it } from "vitest";
import type { ProbeLive } from "./health-probe.js";
import { restartAndVerify } from "./restart.js";
import { parseShow, type Systemctl, type UnitState } from "./systemctl.js";

/** A systemctl whose `show` answers from a script of states, one per call (the last repeats). */
function scripted(states: Partial<UnitState>[] | ((call: number) => Partial<UnitState>)) {
  const calls: string[] = [];
  let shown = 0;
  const systemctl: Systemctl = async (args) => {
    calls.push(args.join(" "));
    if (args[0] !== "show") return { code: 0, stdout: "", stderr: "" };
    const state =
      typeof states === "function" ? states(shown++) : (states[Math.min(shown++, states.length - 1)] ?? {});
    const lines = [
      `LoadState=${state.loadState ?? "loaded"}`,
      `ActiveState=${state.activeState ?? "active"}`,
      `SubState=${state.subState ?? "running"}`,
      `MainPID=${state.mainPid ?? 0}`,
      `NRestarts=${state.restarts ?? 0}`,
      `ExecMainStatus=${state.exitStatus ?? 0}`,
    ];
    return { code: 0, stdout: `${lines.join("\n")}\n`, stderr: "" };
  };
  return { systemctl, calls };
}

function fakeTime() {
  let now = 0;
  const sleep = async (ms: number) => {
    now += ms;
  };
  return { clock: { now: () => now }, sleep };
}

const options = {
  unit: "tenax-gateway.service",
  target: { host: "127.0.0.1", port: 1 },
  timeoutMs: 5_000,
  settleMs: 1_000,
  pollMs: 250,
  attempts: 2,
};
const up: ProbeLive = async () => ({ ok: true, detail: "ok" });

describe("restartAndVerify", () => {
  it("waits through activating and succeeds once the same pid has stayed healthy for the settle period", async () => {
    const { systemctl, calls } = scripted([
      { activeState: "activating", subState: "start", mainPid: 0 },
      { activeState: "activating", subState: "start", mainPid: 41 },
      { mainPid: 41 },
    ]);
    const time = fakeTime();
    const result = await restartAndVerify(options, { systemctl, probe: up, ...time });
    expect(result.ok).toBe(true);
    expect(calls.filter((c) => c.startsWith("restart"))).toHaveLength(1);
    // Two polls to come up, then 1 s of settle at 250 ms a poll.
    expect(time.clock.now()).toBe(1_500);
  });

  it("fails an attempt whose main pid changes after it answered, and retries once", async () => {
    // A process that answers, dies and is replaced every two polls.
    const { systemctl, calls } = scripted((call) => ({ mainPid: 40 + Math.floor(call / 2) }));
    const result = await restartAndVerify(options, { systemctl, probe: up, ...fakeTime() });
    expect(result.ok).toBe(false);
    expect(result.attempts.map((a) => a.detail)).toEqual([
      "the process 40 did not stay up (main pid now 41)",
      "the process 41 did not stay up (main pid now 42)",
    ]);
    expect(calls.filter((c) => c.startsWith("restart"))).toHaveLength(2);
  });

  it("fails when NRestarts climbs, and when the deadline passes without health", async () => {
    const climbing = scripted([
      { mainPid: 5, restarts: 3 },
      { mainPid: 6, restarts: 4 },
    ]);
    const first = await restartAndVerify(
      { ...options, attempts: 1 },
      { systemctl: climbing.systemctl, probe: up, ...fakeTime() },
    );
    expect(first.attempts[0]?.detail).toContain("systemd restarted it 1 time(s)");

    const down: ProbeLive = async () => ({
      ok: false,
      detail: "http://127.0.0.1:1/health/live answered 503",
    });
    const time = fakeTime();
    const stuck = await restartAndVerify(options, {
      systemctl: scripted([{ mainPid: 7 }]).systemctl,
      probe: down,
      ...time,
    });
    expect(stuck.ok).toBe(false);
    expect(stuck.attempts).toHaveLength(2);
    expect(stuck.attempts[1]?.detail).toBe(
      "not healthy within 5 s: the unit is active but http://127.0.0.1:1/health/live answered 503",
    );
    expect(time.clock.now()).toBe(10_000);
  });

  it("counts a restart command that fails as a failed attempt, and stops after a config-error exit", async () => {
    const calls: string[] = [];
    const failing: Systemctl = async (args) => {
      calls.push(args.join(" "));
      if (args[0] === "restart") return { code: 1, stdout: "", stderr: "Job for x failed.\nSee logs.\n" };
      return { code: 0, stdout: "ActiveState=inactive\nSubState=dead\nMainPID=0\n", stderr: "" };
    };
    const result = await restartAndVerify(options, { systemctl: failing, probe: up, ...fakeTime() });
    expect(result.attempts.map((a) => a.detail)).toEqual([
      "systemctl restart failed: Job for x failed.",
      "systemctl restart failed: Job for x failed.",
    ]);

    const config = scripted([{ activeState: "failed", subState: "failed", exitStatus: 78 }]);
    const stopped = await restartAndVerify(options, {
      systemctl: config.systemctl,
      probe: up,
      ...fakeTime(),
    });
    expect(stopped.attempts).toHaveLength(1);
    expect(stopped.attempts[0]?.configError).toBe(true);
    expect(config.calls.filter((c) => c.startsWith("restart"))).toHaveLength(1);

    // Exit 2 (a usage error) is no better after a retry.
    const usage = scripted([{ activeState: "failed", subState: "failed", exitStatus: 2 }]);
    const refused = await restartAndVerify(options, { systemctl: usage.systemctl, probe: up, ...fakeTime() });
    expect(refused.attempts).toHaveLength(1);
    expect(refused.attempts[0]).toMatchObject({
      configError: true,
      detail: "the gateway exited with 2: its configuration is wrong",
    });
    expect(usage.calls.filter((c) => c.startsWith("restart"))).toHaveLength(1);
  });

  it("reads systemctl show output", () => {
    expect(
      parseShow("ActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=2\nExecMainStatus=78\n"),
    ).toEqual({
      loadState: "unknown",
      activeState: "failed",
      subState: "failed",
      mainPid: 0,
      restarts: 2,
      exitStatus: 78,
    });
  });
});
