// The behaviours a simulator can be scripted with, one per request: the schema that checks them when
// they arrive over HTTP or in-process, and the types the server switches on.
import { z } from "zod";
import { TenaxError } from "../../core/errors.js";

const afterChunks = z.number().int().min(0).max(100_000);
const delayMs = z.number().int().min(0).max(600_000);

const replyStep = z.strictObject({
  type: z.literal("reply"),
  text: z.string(),
  finish_reason: z.enum(["stop", "length", "content_filter"]).optional(),
  /** Wait this long between stream chunks (a slow token stream). */
  chunk_delay_ms: delayMs.optional(),
  /** Characters of text per stream chunk. */
  chunk_size: z.number().int().min(1).max(1_000_000).optional(),
});

const toolCallSchema = z.strictObject({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  /** An object is sent as its JSON; a string is sent as it is (so it may be invalid JSON on purpose). */
  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
});

const toolCallsStep = z.strictObject({
  type: z.literal("tool_calls"),
  calls: z.array(toolCallSchema).min(1),
  /** Optional text the assistant says before calling the tools. */
  text: z.string().optional(),
  chunk_delay_ms: delayMs.optional(),
  chunk_size: z.number().int().min(1).max(1_000_000).optional(),
});

const errorStep = z
  .strictObject({
    type: z.literal("error"),
    status: z.number().int().min(200).max(599),
    headers: z.record(z.string().min(1), z.string()).optional(),
    /** A JSON body, sent as application/json. */
    body: z.json().optional(),
    /** A raw body, sent as it is (text/plain unless headers say otherwise). */
    text: z.string().optional(),
  })
  .refine((step) => step.body === undefined || step.text === undefined, {
    message: "an error step takes either body (JSON) or text (raw), not both",
  });

const hangStep = z
  .strictObject({
    type: z.literal("hang"),
    phase: z.enum(["before_headers", "mid_stream"]),
    /** For mid_stream: how many chunks to send before going silent (default 1). */
    after_chunks: afterChunks.optional(),
  })
  .refine((step) => step.phase === "mid_stream" || step.after_chunks === undefined, {
    message: "after_chunks only applies to phase mid_stream",
    path: ["after_chunks"],
  });

const dropStep = z.strictObject({
  type: z.literal("drop"),
  /** How many chunks to send before destroying the socket (default 1). */
  after_chunks: afterChunks.optional(),
  /** What the cut stream was saying (default: the echo a request without a step gets). */
  text: z.string().optional(),
  /** Tool calls the cut stream was making, after its text. */
  calls: z.array(toolCallSchema).min(1).optional(),
});

const malformedStep = z.strictObject({
  type: z.literal("malformed"),
  /** For a stream: how many valid chunks come before the broken one (default 1). */
  after_chunks: afterChunks.optional(),
  /** The invalid payload (default: a truncated JSON object). */
  raw: z.string().optional(),
});

export const simStepSchema = z.discriminatedUnion("type", [
  replyStep,
  toolCallsStep,
  errorStep,
  hangStep,
  dropStep,
  malformedStep,
]);

export const simScriptSchema = z.array(simStepSchema);

export type SimStep = z.infer<typeof simStepSchema>;
export type SimToolCall = z.infer<typeof toolCallSchema>;

export class SimulatorScriptError extends TenaxError {
  override readonly name = "SimulatorScriptError";
  constructor(message: string) {
    super("simulator_script_invalid", message, {
      hint: "A script is a JSON array of steps, each with a type: reply, tool_calls, error, hang, drop or malformed.",
      exitCode: 2,
    });
  }
}

/** Check a script; throws SimulatorScriptError that says which step and field is wrong. */
export function parseScript(input: unknown): SimStep[] {
  const result = simScriptSchema.safeParse(input);
  if (result.success) return result.data;
  throw new SimulatorScriptError(`invalid simulator script: ${describeIssues(result.error)}`);
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length === 0 ? "script" : formatPath(issue.path);
      return `${where}: ${issue.message}`;
    })
    .join("; ");
}

function formatPath(path: PropertyKey[]): string {
  return path
    .map((part, i) => {
      if (typeof part === "number") return `[${part}]`;
      return i === 0 ? String(part) : `.${String(part)}`;
    })
    .join("")
    .replace(/^\[/, "step [");
}
