import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext, waitUntil } from "../../../test/helpers/tool-context.js";
import { groupAlive } from "../process-group.js";
import { ProcessRegistry } from "../processes.js";
import { processTool } from "./process.js";
import { terminalTool } from "./terminal.js";

const registry = new ProcessRegistry();
const tool = processTool(registry);
const terminal = terminalTool(registry);

afterEach(async () => {
  await registry.cleanupAll();
  expect(registry.liveCount()).toBe(0);
});

type Result = Record<string, unknown>;
let mine = toolContext("/", { taskId: "task-a" });
let sibling = toolContext("/", { taskId: "task-b" });

beforeEach(() => {
  const cwd = tempDir();
  mine = toolContext(cwd, { taskId: "task-a" });
  sibling = toolContext(cwd, { taskId: "task-b" });
});

async function background(command: string, context = mine): Promise<string> {
  const started = (await terminal.run({ command, background: true }, context)) as Result;
  return started.id as string;
}

describe("process", () => {
  it("is a poller, exempt from the identical-call streak", () => {
    expect(tool.poller).toBe(true);
    expect(tool.spec.name).toBe("process");
  });

  it("lists every background process, marking other tasks' as not yours", async () => {
    const a = await background("sleep 30");
    const b = await background("sleep 30", sibling);
    const { processes } = (await tool.run({ action: "list" }, mine)) as { processes: Result[] };
    expect(processes.map((p) => [p.id, p.yours, p.status])).toEqual([
      [a, true, "running"],
      [b, false, "running"],
    ]);
    expect(processes[0]).not.toHaveProperty("task_id");
  });

  it("polls only the output that is new since the last poll", async () => {
    const id = await background("echo first; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 7");
    await waitUntil(() => (registry.get(id)?.output_bytes.stdout ?? 0) >= 6);
    expect(await tool.run({ action: "poll", id }, mine)).toMatchObject({
      stdout: "first\n",
      status: "running",
      yours: true,
    });
    expect(await tool.run({ action: "poll", id }, mine)).toMatchObject({ stdout: "", stderr: "" });
    await terminal.run({ command: "touch go" }, mine);
    await waitUntil(() => registry.get(id)?.status === "exited");
    expect(await tool.run({ action: "poll", id }, mine)).toMatchObject({
      stdout: "second\n",
      status: "exited",
      exit_code: 7,
    });
  });

  it("kills a process of this task with its whole group", async () => {
    const id = await background("sleep 30 & wait");
    const pid = registry.get(id)?.pid as number;
    const result = (await tool.run({ action: "kill", id }, mine)) as Result;
    expect(result).toMatchObject({ id, killed: true, status: "exited", signal: "SIGTERM" });
    expect(groupAlive(pid)).toBe(false);
  });

  it("refuses to kill another task's process, and leaves it running", async () => {
    const id = await background("sleep 30", sibling);
    await expect(tool.run({ action: "kill", id }, mine)).rejects.toThrow(
      `process: "${id}" belongs to another task; a task may kill only the processes it started`,
    );
    expect(registry.alive(id)).toBe(true);
    // Its own task may.
    await expect(tool.run({ action: "kill", id }, sibling)).resolves.toMatchObject({ killed: true });
  });

  it("refuses an unknown id, a missing id and a bad action", async () => {
    await expect(tool.run({ action: "poll", id: "proc_999" }, mine)).rejects.toThrow(
      'process: there is no process "proc_999"',
    );
    await expect(tool.run({ action: "kill" }, mine)).rejects.toThrow(
      'process: action "kill" needs argument "id"',
    );
    await expect(tool.run({ action: "stop", id: "x" }, mine)).rejects.toThrow(
      /argument "action": .*"list"\|"poll"\|"kill"/,
    );
  });
});
