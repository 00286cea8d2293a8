import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext, waitUntil } from "../../../test/helpers/tool-context.js";
import { groupAlive, pidAlive } from "../process-group.js";
import { ProcessRegistry } from "../processes.js";
import { terminalTool } from "./terminal.js";

// The default grace (2 s): a kill that takes less shows SIGTERM ended the group, not SIGKILL.
const registry = new ProcessRegistry();
const tool = terminalTool(registry);

afterEach(async () => {
  await registry.cleanupAll();
  expect(registry.liveCount()).toBe(0);
});

type Result = Record<string, unknown> & { stdout: string; stderr: string };
const run = async (args: Record<string, unknown>, context = toolContext(tempDir())) =>
  (await tool.run(args, context)) as Result;

/** The pids a running command printed with `echo $$ $!`, read from the registry while it runs. */
async function printedPids(taskId: string): Promise<number[]> {
  let out = "";
  await waitUntil(
    async () => {
      const running = registry.list(taskId)[0];
      if (running) out += (await registry.poll(running.id, "test")).stdout;
      return out.endsWith("\n");
    },
    5_000,
    "the command to print its pids",
  );
  return out.trim().split(" ").map(Number);
}

describe("terminal", () => {
  it("runs a command in the working folder and returns exit code and output", async () => {
    const cwd = tempDir();
    const result = await run({ command: "pwd; echo warn >&2; exit 4" }, toolContext(cwd));
    expect(result).toMatchObject({
      exit_code: 4,
      signal: null,
      timed_out: false,
      stdout: `${cwd}\n`,
      stderr: "warn\n",
    });
    expect(result).not.toHaveProperty("output_cut");
    expect(registry.list()).toEqual([]);
  });

  it("gives the command nothing on stdin, so a reader of stdin ends at once", async () => {
    const result = await run({ command: "cat; echo done" });
    expect(result).toMatchObject({ exit_code: 0, stdout: "done\n" });
  });

  it("kills the whole group on timeout: the shell and the grandchild it waits on", async () => {
    const context = toolContext(tempDir());
    const pending = run({ command: "sleep 30 & echo $$ $!; wait", timeout: 0.5 }, context);
    const [shell, sleeper] = await printedPids(context.taskId);
    const started = Date.now();
    const result = await pending;
    expect(result).toMatchObject({
      timed_out: true,
      exit_code: null,
      signal: "SIGTERM",
      stdout: `${shell} ${sleeper}\n`,
    });
    expect(String(result.note)).toContain("killed after the 0.5 s timeout");
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(pidAlive(shell as number)).toBe(false);
    expect(pidAlive(sleeper as number)).toBe(false);
    expect(groupAlive(shell as number)).toBe(false);
  });

  it("kills the group at once when the task's signal aborts", async () => {
    const controller = new AbortController();
    const context = toolContext(tempDir(), { signal: controller.signal });
    const pending = run({ command: "sleep 30 & echo $$ $!; wait" }, context);
    const [shell, sleeper] = await printedPids(context.taskId);
    const aborted = Date.now();
    controller.abort();
    const result = await pending;
    expect(Date.now() - aborted).toBeLessThan(1_000);
    expect(result).toMatchObject({ interrupted: true, timed_out: false, exit_code: null });
    expect(pidAlive(shell as number)).toBe(false);
    expect(pidAlive(sleeper as number)).toBe(false);
  });

  it("starts nothing when the signal has already fired", async () => {
    const controller = new AbortController();
    controller.abort();
    const cwd = tempDir();
    await expect(
      run({ command: "touch made", background: true }, toolContext(cwd, { signal: controller.signal })),
    ).rejects.toThrow();
    expect(existsSync(join(cwd, "made"))).toBe(false);
    expect(registry.list()).toEqual([]);
  });

  it("keeps the head and the tail of long output and says how much was cut", async () => {
    const small = terminalTool(registry, { outputBytes: 200 });
    const result = (await small.run({ command: "seq 1 100000" }, toolContext(tempDir()))) as Result;
    expect(result.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(result.stdout.endsWith("99999\n100000\n")).toBe(true);
    const written = Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join("").length;
    const cut = result.output_cut as { stdout: number; stderr: number };
    expect(cut).toMatchObject({ stdout: written - 200, stderr: 0 });
    expect(result.stdout).toContain(`\n[... ${written - 200} bytes omitted ...]\n`);
    expect(result.stdout.length).toBeLessThan(300);
  });

  it("returns a background process's id at once and registers it under the task", async () => {
    const context = toolContext(tempDir(), { taskId: "task-bg" });
    const result = await run({ command: "sleep 30", background: true }, context);
    expect(result).toMatchObject({ background: true, status: "running" });
    const [info] = registry.list("task-bg");
    expect(info).toMatchObject({ id: result.id, pid: result.pid, foreground: false, task_id: "task-bg" });
    expect(pidAlive(result.pid as number)).toBe(true);
    await registry.cleanupTask("task-bg");
    expect(pidAlive(result.pid as number)).toBe(false);
  });

  it("keeps what a foreground command left running as a background process of its task", async () => {
    const context = toolContext(tempDir(), { taskId: "task-left" });
    const result = await run({ command: "sleep 30 & echo started" }, context);
    expect(result).toMatchObject({ exit_code: 0, timed_out: false });
    const left = result.left_running as { id: string };
    expect(registry.get(left.id)).toMatchObject({
      task_id: "task-left",
      foreground: false,
      status: "running",
    });
    await registry.cleanupTask("task-left");
    expect(registry.liveCount()).toBe(0);
  });

  it("asks for a snapshot before a command that may change files, not before a read-only one", async () => {
    const cwd = tempDir();
    const context = toolContext(cwd);
    await run({ command: "ls -la && git status || true" }, context);
    await run({ command: "cat nothing.txt; echo ok" }, context);
    expect(context.fileChanges).toEqual([]);
    await run({ command: "touch made.txt" }, context);
    expect(context.fileChanges).toEqual([{ dir: cwd, reason: "terminal" }]);
    expect(existsSync(join(cwd, "made.txt"))).toBe(true);
    await run({ command: "echo x > out.txt" }, context);
    expect(context.fileChanges).toHaveLength(2);
  });

  it("refuses bad arguments and a working folder that is not there", async () => {
    const context = toolContext(tempDir());
    await expect(tool.run({}, context)).rejects.toThrow('argument "command": is required');
    await expect(tool.run({ command: "" }, context)).rejects.toThrow(/argument "command": /);
    await expect(tool.run({ command: "ls", timeout: 0 }, context)).rejects.toThrow(/argument "timeout": /);
    await expect(tool.run({ command: "ls", timeout: 601 }, context)).rejects.toThrow(
      /argument "timeout": .*600/,
    );
    await expect(tool.run({ command: "ls", background: "yes" }, context)).rejects.toThrow(
      /argument "background": /,
    );
    const gone = join(tempDir(), "gone");
    await expect(tool.run({ command: "ls" }, toolContext(gone))).rejects.toThrow(
      `terminal: cannot run in the working folder "${gone}": it does not exist`,
    );
  });
});
