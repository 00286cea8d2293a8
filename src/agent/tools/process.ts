// process: the background processes terminal started: list them, poll one for the output that is
// new since this task's last poll, or kill one. A task may kill only its own processes.
import { z } from "zod";
import type { ProcessInfo, ProcessRegistry } from "../processes.js";
import { defineTool } from "./define-tool.js";
import { type Tool, type ToolContext, ToolError } from "./types.js";

const schema = z.strictObject({
  action: z.enum(["list", "poll", "kill"]).describe("list all, poll one for new output, or kill one."),
  id: z
    .string()
    .min(1)
    .optional()
    .describe('The process id terminal returned (needed for "poll" and "kill").'),
});

function view(info: ProcessInfo, context: ToolContext) {
  const { task_id: owner, ...rest } = info;
  return { ...rest, yours: owner === context.taskId };
}

export function processTool(registry: ProcessRegistry): Tool {
  const find = (action: string, id: string | undefined): ProcessInfo => {
    if (id === undefined) {
      throw new ToolError(`process: action "${action}" needs argument "id" (list shows the ids)`, { action });
    }
    const info = registry.get(id);
    if (!info) {
      throw new ToolError(
        `process: there is no process "${id}" (it ended and was cleaned up, or never existed); list shows the ids`,
        {
          id,
        },
      );
    }
    return info;
  };

  return defineTool({
    name: "process",
    description:
      'Background processes started by terminal: "list" them, "poll" one (its state and the output that ' +
      'is new since your last poll), or "kill" one of yours (with every process it started).',
    schema,
    readOnly: false,
    poller: true,
    run: async (args, context) => {
      switch (args.action) {
        case "list": {
          const processes = registry.list().map((info) => view(info, context));
          return { processes };
        }
        case "poll": {
          find("poll", args.id);
          const { task_id: owner, ...polled } = await registry.poll(args.id as string, context.taskId);
          return { ...polled, yours: owner === context.taskId };
        }
        case "kill": {
          const info = find("kill", args.id);
          if (info.task_id !== context.taskId) {
            throw new ToolError(
              `process: "${info.id}" belongs to another task; a task may kill only the processes it started`,
              { id: info.id },
            );
          }
          const { task_id: _owner, ...killed } = await registry.kill(info.id);
          return killed;
        }
        default: {
          const never: never = args.action;
          throw new ToolError(`process: unknown action ${String(never)}`);
        }
      }
    },
  });
}
