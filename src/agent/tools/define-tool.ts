// One way to declare a tool: a strict zod schema gives both the JSON Schema the model sees and the
// check of what it sent, so the two never disagree, and a bad argument becomes a ToolError that
// names the argument, what was expected and what came.
import { z } from "zod";
import { type Tool, type ToolContext, ToolError } from "./types.js";

export interface ToolDefinition<Schema extends z.ZodType<Record<string, unknown>>> {
  name: string;
  description: string;
  schema: Schema;
  readOnly: boolean;
  poller?: boolean;
  run(args: z.output<Schema>, context: ToolContext): Promise<unknown>;
}

export function defineTool<Schema extends z.ZodType<Record<string, unknown>>>(
  definition: ToolDefinition<Schema>,
): Tool {
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(definition.schema, { io: "input" });
  return {
    spec: { name: definition.name, description: definition.description, parameters },
    readOnly: definition.readOnly,
    ...(definition.poller ? { poller: true } : {}),
    // async, so a bad argument is a rejected promise like every other failure, never a sync throw.
    run: async (args, context) =>
      definition.run(parseArgs(definition.name, definition.schema, args), context),
  };
}

/** Checks `args` against the schema, or throws a ToolError listing every problem by argument. */
export function parseArgs<Schema extends z.ZodType>(
  tool: string,
  schema: Schema,
  args: unknown,
): z.output<Schema> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const argument = issue.path.join(".");
    const got = issue.path.length > 0 ? valueAt(args, issue.path) : args;
    if (issue.code === "invalid_type" && got === undefined) {
      return { argument, problem: `is required (expected ${issue.expected})` };
    }
    const shown = issue.code === "unrecognized_keys" || got === undefined ? "" : ` (got ${preview(got)})`;
    return { argument, problem: `${issue.message}${shown}` };
  });
  const text = problems
    .map(({ argument, problem }) => (argument ? `argument "${argument}": ${problem}` : problem))
    .join("; ");
  throw new ToolError(`${tool}: bad arguments: ${text}`, { tool, problems });
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== "object" || at === null) return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
