// The faults a test scripts into the simulator: the next calls of a method (or of any, "*") answer
// an error status, a 429 with retry_after, hang until released, or have their connection cut; and
// an outage that fails every call (5xx, cut, or refused connections) until it is lifted. Queued
// faults are taken in order, the first whose method matches the call, each `times` times (1 unless
// told), like the LLM simulator's steps.
import { z } from "zod";
import { TenaxError } from "../../../core/errors.js";

const method = z.string().min(1).default("*");
const times = z.number().int().min(1).max(10_000).default(1);

const errorFault = z.strictObject({
  type: z.literal("error"),
  method,
  times,
  /** 500 to 599 as a rule; any 4xx works too (a 403 "bot was blocked by the user"). */
  status: z.number().int().min(400).max(599).default(502),
  /** The description; Telegram's own text for the status when left out. */
  description: z.string().min(1).optional(),
  /** Answer this raw text (text/html) instead of the JSON error document, as a proxy in front would. */
  raw: z.string().optional(),
});

const rateLimitFault = z.strictObject({
  type: z.literal("rate_limit"),
  method,
  times,
  retry_after: z.number().int().min(0).max(86_400),
});

const hangFault = z.strictObject({
  type: z.literal("hang"),
  method,
  times,
});

const dropFault = z.strictObject({
  type: z.literal("drop"),
  method,
  times,
});

export const faultSchema = z.discriminatedUnion("type", [errorFault, rateLimitFault, hangFault, dropFault]);
export const faultListSchema = z.array(faultSchema);

export type Fault = z.output<typeof faultSchema>;
export type FaultInput = z.input<typeof faultSchema>;

export const outageSchema = z.discriminatedUnion("mode", [
  z.strictObject({ mode: z.literal("error"), status: z.number().int().min(500).max(599).default(502) }),
  z.strictObject({ mode: z.literal("drop") }),
  /** Stop listening: connections are refused until lifted, or for for_ms. */
  z.strictObject({ mode: z.literal("refuse"), for_ms: z.number().int().min(1).max(600_000).optional() }),
]);
export type Outage = z.output<typeof outageSchema>;
export type OutageInput = z.input<typeof outageSchema>;

export class TelegramSimFaultError extends TenaxError {
  override readonly name = "TelegramSimFaultError";
  constructor(message: string) {
    super("telegram_sim_fault_invalid", message, {
      hint: 'A fault is {"type":"error"|"rate_limit"|"hang"|"drop","method":"sendMessage","times":1,...}.',
      exitCode: 2,
    });
  }
}

export function parseFaults(input: unknown): Fault[] {
  const list = Array.isArray(input) ? input : [input];
  const parsed = faultListSchema.safeParse(list);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "fault"}: ${issue.message}`);
  throw new TelegramSimFaultError(`invalid Telegram simulator fault: ${issues.join("; ")}`);
}

export function parseOutage(input: unknown): Outage {
  const parsed = outageSchema.safeParse(input ?? { mode: "error" });
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "outage"}: ${issue.message}`);
  throw new TelegramSimFaultError(`invalid Telegram simulator outage: ${issues.join("; ")}`);
}

/** The queue of scripted faults and the outage, if one is on. */
export class FaultQueue {
  private queue: { fault: Fault; left: number }[] = [];
  outage: Outage | null = null;

  add(faults: Fault[]): void {
    for (const fault of faults) this.queue.push({ fault, left: fault.times });
  }

  /** The fault for a call of `method`, taken off the queue; null when none applies. */
  take(method: string): Fault | Outage | null {
    if (this.outage) return this.outage;
    const index = this.queue.findIndex(
      (q) => q.fault.method === "*" || q.fault.method.toLowerCase() === method.toLowerCase(),
    );
    const entry = this.queue[index];
    if (!entry) return null;
    entry.left -= 1;
    if (entry.left === 0) this.queue.splice(index, 1);
    return entry.fault;
  }

  /** How many faulted calls are still queued. */
  queued(): number {
    return this.queue.reduce((n, q) => n + q.left, 0);
  }

  clear(): void {
    this.queue = [];
    this.outage = null;
  }
}
