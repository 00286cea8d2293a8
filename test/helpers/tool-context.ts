// A ToolContext for running tools in tests: a real folder, a signal the test controls, and a record
// of every beforeFileChange call and event.
import type { ToolContext, ToolEvent } from "../../src/agent/tools/types.js";

export interface TestToolContext extends ToolContext {
  fileChanges: Array<{ dir: string; reason: string }>;
  events: ToolEvent[];
}

export function toolContext(
  cwd: string,
  options: { taskId?: string; signal?: AbortSignal; approvals?: ToolContext["approvals"] } = {},
): TestToolContext {
  const fileChanges: Array<{ dir: string; reason: string }> = [];
  const events: ToolEvent[] = [];
  return {
    taskId: options.taskId ?? "task-a",
    sessionId: "session-1",
    turnId: "turn-1",
    cwd,
    callId: "call-1",
    approvals: options.approvals ?? null,
    signal: options.signal ?? new AbortController().signal,
    fileChanges,
    events,
    beforeFileChange: async (dir, reason) => {
      fileChanges.push({ dir, reason });
    },
    emit: (event) => {
      events.push(event);
    },
  };
}

/** Polls `check` every 10 ms until it returns true; fails after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
