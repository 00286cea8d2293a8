import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { waitUntil } from "../../test/helpers/tool-context.js";
import { groupAlive, pidAlive } from "./process-group.js";
import { identify, isRunning } from "./process-identity.js";
import { ProcessRegistry } from "./processes.js";

const registries: ProcessRegistry[] = [];
function registry(options: ConstructorParameters<typeof ProcessRegistry>[0] = {}): ProcessRegistry {
  const made = new ProcessRegistry(options);
  registries.push(made);
  return made;
}

afterEach(async () => {
  for (const made of registries.splice(0)) {
    await made.cleanupAll();
    expect(made.liveCount()).toBe(0);
  }
});

/** The pids a command printed (`echo $$ $!`), once it printed them. */
async function printedPids(reg: ProcessRegistry, id: string): Promise<number[]> {
  let out = "";
  await waitUntil(
    async () => {
      out += (await reg.poll(id, "pids")).stdout;
      return out.endsWith("\n");
    },
    5_000,
    "the pids",
  );
  return out.trim().split(/\s+/).map(Number);
}

describe("ProcessRegistry", () => {
  it("runs a command in its folder and reports its exit code and output", async () => {
    const reg = registry();
    const cwd = tempDir();
    const started = await reg.start("pwd; echo oops >&2; exit 3", { cwd, taskId: "t1" });
    expect(started.status).toBe("running");
    await waitUntil(() => reg.get(started.id)?.status === "exited");
    const polled = await reg.poll(started.id, "t1");
    expect(polled).toMatchObject({ status: "exited", exit_code: 3, signal: null, task_id: "t1" });
    expect(polled.stdout.trim()).toBe(cwd);
    expect(polled.stderr).toBe("oops\n");
    expect(reg.alive(started.id)).toBe(false);
  });

  it("rejects a command whose folder does not exist", async () => {
    const reg = registry();
    await expect(reg.start("true", { cwd: "/nonexistent/tenax-test", taskId: "t1" })).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(reg.list()).toEqual([]);
  });

  it("returns only new output on each poll, separately for each reader", async () => {
    const reg = registry();
    const { id } = await reg.start("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two; sleep 30", {
      cwd: tempDir(),
      taskId: "t1",
    });
    const cwd = reg.get(id)?.cwd as string;
    await waitUntil(() => (reg.get(id)?.output_bytes.stdout ?? 0) >= 4);
    expect((await reg.poll(id, "t1")).stdout).toBe("one\n");
    expect((await reg.poll(id, "t1")).stdout).toBe("");
    writeFileSync(join(cwd, "go"), "");
    await waitUntil(() => (reg.get(id)?.output_bytes.stdout ?? 0) >= 8);
    expect(await reg.poll(id, "t1")).toMatchObject({ stdout: "two\n", status: "running" });
    // Another reader has its own position: it sees everything once.
    expect((await reg.poll(id, "t2")).stdout).toBe("one\ntwo\n");
  });

  it("kills the whole group, grandchildren included, and waits until it is gone", async () => {
    const reg = registry();
    const { id, pid } = await reg.start("sleep 30 & echo $!; wait", { cwd: tempDir(), taskId: "t1" });
    const [sleeper] = await printedPids(reg, id);
    expect(pidAlive(sleeper as number)).toBe(true);
    const result = await reg.kill(id);
    expect(result).toMatchObject({ killed: true, status: "exited", signal: "SIGTERM" });
    expect(pidAlive(pid)).toBe(false);
    expect(pidAlive(sleeper as number)).toBe(false);
    expect(groupAlive(pid)).toBe(false);
  });

  it("uses SIGKILL on a group that ignores SIGTERM, after the grace", async () => {
    const reg = registry({ graceMs: 300 });
    const { id, pid } = await reg.start("trap '' TERM; sleep 30 & echo $!; wait", {
      cwd: tempDir(),
      taskId: "t1",
    });
    const [sleeper] = await printedPids(reg, id);
    const before = Date.now();
    const result = await reg.kill(id);
    expect(Date.now() - before).toBeGreaterThanOrEqual(250);
    expect(result).toMatchObject({ killed: true, signal: "SIGKILL" });
    expect(pidAlive(sleeper as number)).toBe(false);
    expect(groupAlive(pid)).toBe(false);
  });

  it("counts a group as running while a process it left behind lives, after the shell exited", async () => {
    const reg = registry();
    const { id, pid } = await reg.start("sleep 30 >/dev/null 2>&1 &", { cwd: tempDir(), taskId: "t1" });
    await waitUntil(() => reg.get(id)?.exit_code === 0, 5_000, "the shell to exit");
    expect(reg.get(id)?.status).toBe("running");
    expect(reg.alive(id)).toBe(true);
    expect(reg.liveCount()).toBe(1);
    await reg.kill(id);
    expect(groupAlive(pid)).toBe(false);
    expect(reg.get(id)?.status).toBe("exited");
    expect(reg.liveCount()).toBe(0);
  });

  it("cleanupTask kills the task's processes and leaves a sibling task's running", async () => {
    const reg = registry();
    const cwd = tempDir();
    const a1 = await reg.start("sleep 30 & wait", { cwd, taskId: "task-a" });
    const a2 = await reg.start("sleep 30", { cwd, taskId: "task-a" });
    const b1 = await reg.start("sleep 30 & wait", { cwd, taskId: "task-b" });
    expect(reg.liveCount()).toBe(3);

    const cleaned = await reg.cleanupTask("task-a");
    expect(cleaned.sort()).toEqual([a1.id, a2.id].sort());
    expect(groupAlive(a1.pid)).toBe(false);
    expect(groupAlive(a2.pid)).toBe(false);
    expect(reg.list("task-a")).toEqual([]);
    expect(reg.alive(b1.id)).toBe(true);
    expect(groupAlive(b1.pid)).toBe(true);
    expect(reg.liveCount()).toBe(1);

    expect(await reg.cleanupTask("task-b")).toEqual([b1.id]);
    expect(groupAlive(b1.pid)).toBe(false);
    expect(reg.list()).toEqual([]);
  });

  it("cleanupTask ends what left the task's groups (setsid) by its mark, and not a sibling task's", async () => {
    const reg = registry({ profile: "/test-profile" });
    const cwd = tempDir();
    const mine = await reg.launch("setsid sleep 311 & echo $!", { cwd, taskId: "a", foreground: true });
    const theirs = await reg.launch("setsid sleep 311 & echo $!", { cwd, taskId: "b", foreground: true });
    await mine.waitForExit(new AbortController().signal);
    await theirs.waitForExit(new AbortController().signal);
    await mine.settle(200);
    await theirs.settle(200);
    // setsid runs sleep in place of the backgrounded shell: $! is the sleeper.
    const sleeper = (h: typeof mine) => {
      const id = identify(Number(h.output(100).stdout.trim()));
      if (id === null) throw new Error(`no sleeper: ${h.output(100).stdout}`);
      return id;
    };
    const a = sleeper(mine);
    const b = sleeper(theirs);
    // Outside the groups: the shells are gone, the groups with them, the sleepers run on.
    expect([mine.alive(), theirs.alive()]).toEqual([false, false]);
    expect(isRunning(a)).toBe(true);
    try {
      await reg.cleanupTask("a");
      expect(isRunning(a)).toBe(false);
      expect(isRunning(b)).toBe(true);
    } finally {
      if (isRunning(b)) process.kill(b.pid, "SIGKILL");
    }
  });

  it("cleanupAll ends every task's processes", async () => {
    const reg = registry();
    const cwd = tempDir();
    const started = [
      await reg.start("sleep 30", { cwd, taskId: "x" }),
      await reg.start("sleep 30", { cwd, taskId: "y" }),
    ];
    expect(await reg.cleanupAll()).toHaveLength(2);
    for (const info of started) expect(groupAlive(info.pid)).toBe(false);
    expect(reg.liveCount()).toBe(0);
  });

  it("a poll of an exited command waits for output still in its pipe", async () => {
    // Node may report the shell's exit before its pipe is read to the end. Here a child that left
    // the group holds the pipe and writes after the shell exited: the poll that reports the exit
    // waits for the pipe to close, so it holds that output too.
    const reg = registry();
    const { id } = await reg.start("setsid sh -c 'sleep 0.3; echo late' & echo early; exit 7", {
      cwd: tempDir(),
      taskId: "t1",
    });
    await waitUntil(() => reg.get(id)?.status === "exited");
    const polled = await reg.poll(id, "t1");
    expect(polled).toMatchObject({ status: "exited", exit_code: 7, stdout: "early\nlate\n" });
  });

  it("keeps its output bounded: the first bytes and the latest", async () => {
    const reg = registry({ headBytes: 100, tailBytes: 100, pollBytes: 1_000 });
    const { id } = await reg.start("seq 1 20000", { cwd: tempDir(), taskId: "t1" });
    await waitUntil(() => reg.get(id)?.status === "exited");
    const polled = await reg.poll(id, "t1");
    expect(polled.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(polled.stdout.endsWith("19999\n20000\n")).toBe(true);
    expect(polled.omitted_bytes?.stdout).toBe((reg.get(id)?.output_bytes.stdout ?? 0) - 200);
  });

  it("forgets the oldest finished processes past the limit", async () => {
    const reg = registry({ maxFinished: 2 });
    const cwd = tempDir();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { id } = await reg.start("true", { cwd, taskId: "t1" });
      await waitUntil(() => reg.get(id)?.status === "exited");
      ids.push(id);
    }
    await reg.start("true", { cwd, taskId: "t1" });
    expect(reg.get(ids[0] as string)).toBeUndefined();
    expect(reg.get(ids[3] as string)).toBeDefined();
    expect(reg.list().length).toBeLessThanOrEqual(3);
  });
});
