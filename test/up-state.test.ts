// up.json is trusted only while the process it names is still that `tenax up`: a file left by a
// killed up whose pid now belongs to another process (real child processes stand in for those) is
// never taken for a live up, whatever that process's arguments look like.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { bootId, identify } from "../src/core/process-identity.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { readUpState, type UpState, upStateFile } from "../src/profile/up-state.js";
import { BIN } from "./helpers/cli.js";
import { until } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

const decoys: ChildProcess[] = [];
afterEach(() => {
  for (const child of decoys.splice(0)) child.kill("SIGKILL");
});

/** A live process that is no Tenax, started with `args` after its script (e.g. "up"). */
async function decoy(...args: string[]): Promise<{ pid: number; start: number }> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", ...args], { stdio: "ignore" });
  decoys.push(child);
  const pid = child.pid ?? 0;
  await until(() => identify(pid) !== null);
  return { pid, start: identify(pid)?.start ?? -1 };
}

function state(pid: number, start: number | null, boot: string | null = bootId()): UpState {
  return {
    pid,
    pid_start: start,
    boot_id: boot,
    started_at: 1,
    updated_at: 2,
    gateway: {
      state: "gave_up",
      pid: null,
      pid_start: null,
      host: "127.0.0.1",
      port: 8700,
      restarts: 2,
      next_restart_at: null,
      last_exit: { code: 1, signal: null, at: 1, clean: false },
      unclean_exits: 3,
      max_unclean_exits: 3,
      window_ms: 300_000,
      gave_up: { reason: "crash_loop", at: 1 },
    },
    dashboard: { pid: null, pid_start: null, state: "stopped", last_exit: null },
  };
}

function write(paths: ProfilePaths, value: unknown): void {
  mkdirSync(paths.dir, { recursive: true });
  writeFileSync(upStateFile(paths), `${JSON.stringify(value)}\n`);
}

describe("up.json and a reused pid", () => {
  it("a file without the start time (as an older up wrote it) naming a live process with `up` in its arguments is not trusted", async () => {
    const paths = profileWith();
    const other = await decoy("up");
    const { pid_start: _start, boot_id: _boot, ...old } = state(other.pid, other.start);
    write(paths, {
      ...old,
      gateway: { ...old.gateway, pid_start: undefined },
      dashboard: { ...old.dashboard, pid_start: undefined },
    });
    expect(readUpState(paths)).toBeNull();
  });

  it("trusts the pid only with its recorded start time, in this boot, running this Tenax's CLI script with `up`", async () => {
    const paths = profileWith();
    // Arguments that look like `tenax up` (the real script's path, then up), in a process that is not.
    const lookalike = await decoy(BIN, "up");
    write(paths, state(lookalike.pid, lookalike.start));
    // The control: with everything matching, the file is taken (so each refusal below is that check's).
    expect(readUpState(paths)?.pid).toBe(lookalike.pid);

    write(paths, state(lookalike.pid, lookalike.start + 1));
    expect(readUpState(paths)).toBeNull();
    write(paths, state(lookalike.pid, null));
    expect(readUpState(paths)).toBeNull();
    write(paths, state(lookalike.pid, lookalike.start, "another-boot"));
    expect(readUpState(paths)).toBeNull();

    // The right pid and start time, but no Tenax script in its arguments, or no `up`.
    const plain = await decoy("up");
    write(paths, state(plain.pid, plain.start));
    expect(readUpState(paths)).toBeNull();
    const noUp = await decoy(BIN, "chat");
    write(paths, state(noUp.pid, noUp.start));
    expect(readUpState(paths)).toBeNull();
  });
});
