import { describe, expect, it } from "vitest";
import { profilePaths } from "../profile/paths.js";
import type { UpState } from "../profile/up-state.js";
import { type AdviceInput, gatewayAdvice } from "./gateway-advice.js";

const NOW = 1_800_000_000_000;
const paths = profilePaths("/home/u/.tenax", "work");
const none = { pid: null, running: false };

function upWith(gateway: Partial<UpState["gateway"]>): UpState {
  return {
    pid: 4242,
    pid_start: 1000,
    boot_id: null,
    started_at: NOW - 60_000,
    updated_at: NOW,
    gateway: {
      state: "running",
      pid: null,
      pid_start: null,
      host: "127.0.0.1",
      port: 8700,
      restarts: 0,
      next_restart_at: null,
      last_exit: null,
      unclean_exits: 0,
      max_unclean_exits: 3,
      window_ms: 300_000,
      gave_up: null,
      ...gateway,
    },
    dashboard: { pid: 4243, pid_start: 1001, state: "running", last_exit: null },
  };
}

const advise = (input: Partial<AdviceInput>) =>
  gatewayAdvice({ paths, now: NOW, up: null, holder: none, launch: null, dashboardRunning: false, ...input });

describe("gatewayAdvice", () => {
  it("under a restarting tenax up: wait, with the seconds left and the exit that caused it", () => {
    const advice = advise({
      up: upWith({
        state: "restarting",
        restarts: 1,
        unclean_exits: 2,
        next_restart_at: NOW + 1500,
        last_exit: { code: 1, signal: null, at: NOW - 500, clean: false },
      }),
    });
    expect(advice).toEqual({
      manager: "up",
      situation:
        "the gateway exited with code 1 1 s ago; tenax up (pid 4242) restarts it in 2 s (restart 2; 2 unclean exit(s) within 5 min, it gives up at 3)",
      next: "wait: tenax up (pid 4242) starts it by itself; to follow it, run: tenax --profile work status",
      command: "tenax --profile work status",
    });
  });

  it("under a tenax up that gave up: fix what the log or config shows, then tenax up again", () => {
    const crashLoop = advise({
      up: upWith({
        state: "gave_up",
        unclean_exits: 3,
        gave_up: { reason: "crash_loop", at: NOW },
        last_exit: { code: null, signal: "SIGSEGV", at: NOW - 3000, clean: false },
      }),
    });
    expect(crashLoop.next).toBe(
      "fix what /home/u/.tenax/profiles/work/logs/gateway.log shows, then run: tenax --profile work up",
    );
    expect(crashLoop.command).toBe("tenax --profile work up");
    expect(crashLoop.situation).toMatch(
      /gave up restarting the gateway after 3 unclean exits within 5 min \(a crash loop\); the gateway was killed by SIGSEGV 3 s ago$/,
    );
    const exited = (code: number) => ({ code, signal: null, at: NOW - 1000, clean: false });
    const configError = (code: number) =>
      advise({
        up: upWith({
          state: "gave_up",
          gave_up: { reason: "config_error", at: NOW },
          last_exit: exited(code),
        }),
      });
    const config = configError(78);
    const waits =
      "tenax up (pid 4242) starts it again once /home/u/.tenax/profiles/work/config.yaml or /home/u/.tenax/profiles/work/.env changes";
    expect(config.situation).toBe(`the gateway cannot start on its configuration (exit 78); ${waits}`);
    // A usage error (exit 2: a refused flag or setting) is told as what it was, the same way.
    expect(configError(2).situation).toBe(`the gateway cannot start on its configuration (exit 2); ${waits}`);
    expect(config.next).toBe(
      "fix /home/u/.tenax/profiles/work/config.yaml (the config layer shows the error, with its line); to see it again, run: tenax --profile work doctor",
    );
    expect(config.command).toBe("tenax --profile work doctor");
  });

  it("under tenax up, a gateway that holds its pid file but does not answer can be killed for a new one", () => {
    const advice = advise({
      up: upWith({ state: "running", pid: 777 }),
      holder: { pid: 777, running: true },
    });
    expect(advice.command).toBe("kill 777");
    expect(advice.next).toMatch(/tenax up starts a new one: kill 777$/);
  });

  it("for the systemd service: tenax gateway restart", () => {
    const launch = { started_by: "systemd" as const, args: ["gateway", "run"] };
    const crashed = advise({ holder: { pid: 99, running: false }, launch });
    expect(crashed).toMatchObject({ manager: "systemd", command: "tenax --profile work gateway restart" });
    expect(crashed.situation).toMatch(/systemd starts the service again by itself/);
    const hung = advise({ holder: { pid: 99, running: true }, launch });
    expect(hung.next).toBe("if it stays so, run: tenax --profile work gateway restart");
  });

  it("for a gateway started by hand: the command that started it", () => {
    const advice = advise({
      holder: { pid: 99, running: false },
      launch: { started_by: "run", args: ["gateway", "run", "--host", "127.0.0.2", "--port", "0"] },
    });
    expect(advice.command).toBe("tenax --profile work gateway run --host 127.0.0.2 --port 0");
  });

  it("with nothing known: tenax up, or tenax gateway run beside a dashboard that already holds its port", () => {
    expect(advise({}).next).toBe(
      "tenax --profile work up (or tenax --profile work gateway start for the service)",
    );
    expect(advise({ dashboardRunning: true }).command).toBe("tenax --profile work gateway run");
    // The gateway was run by a tenax up that is gone too (killed): the same, the crash told.
    const orphan = advise({
      holder: { pid: 99, running: false },
      launch: { started_by: "up", args: ["gateway", "run"] },
    });
    expect(orphan.situation).toMatch(/the tenax up that ran it is gone too$/);
    expect(orphan.command).toBe("tenax --profile work up");
  });
});
