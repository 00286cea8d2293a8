// terminal: a shell command in the task's folder, as a real child process leading its own process
// group. In the foreground it runs up to a timeout and the whole group is killed on timeout or
// interrupt; in the background it joins the process registry under its task and returns at once.
import { stat } from "node:fs/promises";
import { z } from "zod";
import { type Clock, systemClock } from "../../core/deps.js";
import type { ProcessRegistry } from "../processes.js";
import { defineTool } from "./define-tool.js";
import { isReadOnlyCommand } from "./read-only-command.js";
import { fsProblem } from "./text-file.js";
import { type Tool, type ToolContext, ToolError } from "./types.js";

export interface TerminalOptions {
  defaultTimeoutS?: number;
  maxTimeoutS?: number;
  /** Per stream in a foreground result: half from the start of the output, half from its end. */
  outputBytes?: number;
  /** How long to wait for the last output after the shell exited. */
  settleMs?: number;
  clock?: Clock;
  /** The exec policy and its approvals: a command runs only once this admits it. */
  gate?: { admit(tool: string, command: string, context: ToolContext): Promise<void> };
}

export const TERMINAL_DEFAULT_TIMEOUT_S = 120;
export const TERMINAL_MAX_TIMEOUT_S = 600;

export function terminalTool(registry: ProcessRegistry, options: TerminalOptions = {}): Tool {
  const defaultTimeoutS = options.defaultTimeoutS ?? TERMINAL_DEFAULT_TIMEOUT_S;
  const maxTimeoutS = options.maxTimeoutS ?? TERMINAL_MAX_TIMEOUT_S;
  const outputBytes = options.outputBytes ?? 20_000;
  const settleMs = options.settleMs ?? 1_000;
  const clock = options.clock ?? systemClock;

  const schema = z.strictObject({
    command: z.string().min(1).describe("A shell command (sh -c), run in the working folder."),
    background: z
      .boolean()
      .optional()
      .describe(
        "Start it and return its process id at once (for servers, watchers, long jobs); see process.",
      ),
    timeout: z
      .number()
      .positive()
      .max(maxTimeoutS)
      .optional()
      .describe(
        `Seconds a foreground command may run before its processes are killed (default ${defaultTimeoutS}).`,
      ),
  });

  return defineTool({
    name: "terminal",
    description:
      "Run a shell command in the working folder. In the foreground it waits for the end (or the timeout) " +
      "and returns exit code, stdout and stderr (long output keeps its beginning and end). With " +
      "background: true it returns a process id at once; use process to poll or kill it. No input is " +
      "given on stdin.",
    schema,
    readOnly: false,
    run: async (args, context) => {
      const cwdInfo = await stat(context.cwd).catch((error: unknown) => {
        throw new ToolError(
          `terminal: cannot run in the working folder "${context.cwd}": ${fsProblem(error)}`,
        );
      });
      if (!cwdInfo.isDirectory()) {
        throw new ToolError(`terminal: the working folder "${context.cwd}" is not a folder`);
      }
      context.signal.throwIfAborted();
      await options.gate?.admit("terminal", args.command, context);
      if (!isReadOnlyCommand(args.command)) await context.beforeFileChange(context.cwd, "terminal");
      // A snapshot may take a while: an interrupt during it still means the command never starts.
      context.signal.throwIfAborted();

      const started = clock.now();
      const handle = await registry
        .launch(args.command, { cwd: context.cwd, taskId: context.taskId, foreground: !args.background })
        .catch((error: unknown) => {
          throw new ToolError(`terminal: could not start the command: ${fsProblem(error)}`);
        });

      if (args.background) {
        const info = handle.info();
        return {
          id: info.id,
          pid: info.pid,
          status: info.status,
          background: true,
          note:
            `started; poll its output with process (action "poll", id "${info.id}"), stop it with action "kill"` +
            (args.timeout === undefined ? "" : "; timeout applies to foreground commands only"),
        };
      }

      const timer = AbortSignal.timeout((args.timeout ?? defaultTimeoutS) * 1000);
      const exited = await handle.waitForExit(AbortSignal.any([context.signal, timer]));
      let killed: boolean | undefined;
      let leftRunning = false;
      if (!exited) {
        killed = (await handle.kill()).killed;
        await handle.settle(settleMs);
      } else if (handle.alive()) {
        // The shell is done but left processes in its group (`server &`): they keep running as a
        // background process of this task instead of leaking past it.
        handle.keepInBackground();
        leftRunning = true;
      } else {
        await handle.settle(settleMs);
      }
      if (!leftRunning) handle.forget();

      const info = handle.info();
      const output = handle.output(outputBytes);
      const interrupted = !exited && context.signal.aborted;
      const timedOut = !exited && !interrupted;
      const result: Record<string, unknown> = {
        exit_code: info.exit_code,
        signal: info.signal,
        timed_out: timedOut,
        duration_ms: clock.now() - started,
        stdout: output.stdout,
        stderr: output.stderr,
      };
      if (output.omitted_bytes.stdout > 0 || output.omitted_bytes.stderr > 0) {
        result.output_cut = {
          ...output.omitted_bytes,
          note: `each stream keeps its first and last ${Math.floor(outputBytes / 2)} bytes`,
        };
      }
      if (interrupted) result.interrupted = true;
      if (timedOut) {
        result.note = `killed after the ${args.timeout ?? defaultTimeoutS} s timeout, with every process it started`;
      }
      if (killed === false) result.warning = "some of its processes survived SIGKILL";
      if (leftRunning) {
        result.left_running = {
          id: info.id,
          note: `the command exited but left processes running; they are background process "${info.id}" (see process)`,
        };
      }
      return result;
    },
  });
}
