// The shape of config.yaml: every key, its default and its bounds, checked with zod. Objects are
// strict so a misspelt key is an error, never silently ignored. Messages say what was expected; the
// loader adds the file, line, key path and the value it found.
import { z } from "zod";
import { PROVIDER_TYPES } from "../llm/runtime-config.js";
import { simStepSchema } from "../llm/simulator/steps.js";
import { DEFAULT_SIM_MODELS } from "../llm/simulator/types.js";
import { cronSchema } from "./cron-schema.js";
import { dashboardSchema } from "./dashboard-schema.js";
import { gatewaySchema } from "./gateway-schema.js";
import { mcpSchema } from "./mcp-schema.js";
import { platformsSchema } from "./platforms-schema.js";
import { flag, httpUrl, intBetween, positiveInt, text } from "./schema-parts.js";
import { storeSchema } from "./store-schema.js";
import { telemetrySchema } from "./telemetry-schema.js";
import { toolsSchema } from "./tools-schema.js";

// The provider types and the built-in-simulator test are the model runtime's (llm/runtime-config.ts).
export { PROVIDER_TYPES, type ProviderType, usesBuiltInSimulator } from "../llm/runtime-config.js";

/** The provider name that means "the built-in simulator" when no providers are configured. */
export const BUILT_IN_SIMULATOR = "simulator";

const target = z.strictObject({
  provider: text("a provider name"),
  name: text("a model name"),
});
export type ModelTarget = z.infer<typeof target>;

/** The output budget of a model listed without one: enough for a long reply, never most of a small window. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

export function defaultMaxOutputTokens(contextWindow: number): number {
  return Math.max(1, Math.min(DEFAULT_MAX_OUTPUT_TOKENS, Math.floor(contextWindow / 4)));
}

// max_output_tokens may be left out (docs/CONFIG.md lists a model with its context_window alone): it
// defaults to 4096, or a quarter of the window when that is smaller, so a request still fits.
const modelLimits = z
  .strictObject({
    context_window: positiveInt("a positive integer (tokens)"),
    max_output_tokens: positiveInt("a positive integer (tokens)").optional(),
  })
  .transform((limits) => ({
    context_window: limits.context_window,
    max_output_tokens: limits.max_output_tokens ?? defaultMaxOutputTokens(limits.context_window),
  }));

const seconds = () =>
  z
    .number({ error: "expected a positive number of seconds" })
    .positive({ error: "expected a positive number of seconds" });

/** Per-provider deadlines, in seconds; each one that passes ends the call as a timeout or stream_drop. */
const timeouts = z.strictObject({
  connect: seconds().default(10),
  first_byte: seconds().default(60),
  idle: seconds().default(60),
  total: seconds().default(600),
});
export type TimeoutsConfig = z.infer<typeof timeouts>;

const provider = z.strictObject({
  type: z.enum(PROVIDER_TYPES, { error: `expected one of: ${PROVIDER_TYPES.join(", ")}` }),
  base_url: httpUrl.optional(),
  // Left out, the provider needs no key (a local Ollama or llama.cpp server); an empty list is a mistake.
  api_keys: z
    .array(text("a non-empty API key"), { error: "expected a list of API keys" })
    .min(1, {
      error: "expected at least one key; leave api_keys out for a server that needs none (Ollama, llama.cpp)",
    })
    .optional(),
  max_concurrency: positiveInt().default(8),
  models: z.record(z.string(), modelLimits, { error: "expected a mapping of model names" }).default({}),
  timeouts: timeouts.prefault({}),
  /** Simulator only: steps queued when the in-process simulator starts (for demos and the drill). */
  script: z.array(simStepSchema, { error: "expected a list of simulator steps" }).optional(),
});
export type ProviderConfig = z.infer<typeof provider>;

const chain = () => z.array(target, { error: "expected a list of { provider, name }" }).default([]);

const auxiliaryTask = z.strictObject({
  provider: text("a provider name"),
  name: text("a model name"),
  timeout: z
    .number({ error: "expected a positive number of seconds" })
    .positive({ error: "expected a positive number of seconds" })
    .default(120),
  fallback: chain(),
});
export type AuxiliaryTaskConfig = z.infer<typeof auxiliaryTask>;

const auxiliary = z.strictObject({
  compression: auxiliaryTask.optional(),
  title: auxiliaryTask.optional(),
  vision: auxiliaryTask.optional(),
});

function fraction(what: string, min: "open" | "closed", max: "open" | "closed") {
  const error = `expected ${what}`;
  const base = z.number({ error });
  const low = min === "open" ? base.gt(0, { error }) : base.min(0, { error });
  return max === "open" ? low.lt(1, { error }) : low.lte(1, { error });
}

/** Context compression: when it starts, what it keeps, and how it backs off (src/agent/compression.ts). */
const compression = z
  .strictObject({
    /** Off: no automatic compression (threshold or overflow); /compress still works. */
    enabled: flag().default(true),
    /** Compress when a request fills this fraction of the primary model's context window. */
    threshold: fraction("a number greater than 0 and at most 1", "open", "closed").default(0.5),
    /** The recent turns kept word for word (the tail), as a fraction of the primary window. */
    keep_recent: fraction("a number greater than 0 and less than 1", "open", "open").default(0.2),
    /** The longest summary asked of the summarizer, in tokens. */
    summary_max_tokens: intBetween(100, 100_000).default(2000),
    /** Compression attempts (summarized or dropped) in one turn. */
    max_attempts_per_turn: intBetween(1, 10).default(2),
    /** Cooldown after consecutive summarizer failures: the first, the second, ... the last repeats. */
    cooldown_seconds: z
      .array(
        z
          .number({ error: "expected a positive number of seconds" })
          .positive({ error: "expected a positive number of seconds" }),
        { error: "expected a list of seconds" },
      )
      .min(1, { error: "expected at least one cooldown" })
      .default([60, 300, 900]),
    /** A pass that saves less than this fraction of the request pauses automatic compression. */
    min_saving: fraction("a number from 0 to less than 1", "closed", "open").default(0.1),
    /** How long that pause lasts for the session. */
    low_saving_pause_seconds: z
      .number({ error: "expected a number of seconds (0 or more)" })
      .min(0, { error: "expected a number of seconds (0 or more)" })
      .default(1800),
  })
  .refine((c) => c.keep_recent < c.threshold, {
    error: "keep_recent must be less than threshold, or compression could never bring a request under it",
    path: ["keep_recent"],
    // Only once both are valid numbers: a bad threshold is reported once, as itself.
    when: (payload) => payload.issues.length === 0,
  });
export type CompressionSettings = z.infer<typeof compression>;

/** The turn loop's limits and guardrails. */
const agent = z
  .strictObject({
    /** Sent first in every request; the default says what Tenax is and how to use its tools. */
    system_prompt: z.string({ error: "expected a string" }).optional(),
    /** Model calls in one turn before it stops with a message. */
    max_iterations: intBetween(1, 1000).default(50),
    /** Times a reply cut by the output limit is continued before it is kept as partial. */
    max_continuations: intBetween(0, 10).default(2),
    /** The same call with the same arguments and the same result this many times in a row halts the turn. */
    identical_call_limit: intBetween(2, 100).default(3),
    /** The same call failing this many times in a row is blocked from running again in the turn. */
    failing_call_limit: intBetween(1, 100).default(2),
    /** A running turn's lease; its heartbeat renews it, so an expired lease means the turn died. */
    lease_seconds: intBetween(5, 3600).default(60),
    /** Subagents (delegate_task) running at once. */
    max_subagents: intBetween(1, 64).default(3),
    /**
     * Seconds without progress (no provider bytes, no tool output, no event) after which a running
     * turn is stalled: reported, not stopped. A wait for an approval never counts.
     */
    stall_after: intBetween(1, 86_400).default(120),
    /** Seconds a turn may run before it is ended with code turn_deadline (cron jobs keep --timeout). */
    turn_deadline: intBetween(1, 604_800).default(1800),
  })
  .refine((a) => a.stall_after < a.turn_deadline, {
    error:
      "stall_after must be less than turn_deadline: a turn is ended at its deadline, so it could never be seen stalled first",
    path: ["stall_after"],
    when: (payload) => payload.issues.length === 0,
  });
export type AgentConfig = z.infer<typeof agent>;

const retry = z.strictObject({ max_attempts: intBetween(1, 20).default(4) });

/**
 * Each model's circuit breaker (llm/breaker-state.ts), shared by every process of the profile:
 * `failures` unwell failures in a row (5xx, timeouts, unreachable), each within `window` seconds of
 * the last, open it; calls then skip it for `cooldown` seconds, after which one probe call goes;
 * a failed probe doubles the cool-down, up to `max_cooldown`.
 */
const breaker = z
  .strictObject({
    enabled: flag().default(true),
    failures: intBetween(1, 1000).default(5),
    window: seconds().default(60),
    cooldown: seconds().default(30),
    max_cooldown: seconds().default(600),
  })
  .refine((b) => b.max_cooldown >= b.cooldown, {
    error: "expected max_cooldown to be at least cooldown (seconds)",
    path: ["max_cooldown"],
  });

/** The gateway's log file (logs/gateway.log): rotated at max_mb, keeping `keep` old files. */
const logs = z.strictObject({
  max_mb: z
    .number({ error: "expected a size in MiB (more than 0)" })
    .positive({ error: "expected a size in MiB (more than 0)" })
    .default(10),
  keep: intBetween(0, 100).default(3),
});

/** The gateway's background health checks: how often, and how long one may take before it counts as hung. */
const health = z.strictObject({
  probe_interval: z
    .number({ error: "expected a number of seconds (more than 0)" })
    .positive({ error: "expected a number of seconds (more than 0)" })
    .default(5),
  probe_timeout: z
    .number({ error: "expected a number of seconds (more than 0)" })
    .positive({ error: "expected a number of seconds (more than 0)" })
    .default(10),
  /**
   * While the gateway runs, every page of the store (state.db, then search.db) is checked by SQLite
   * at least this often, in seconds (0: never), unless `integrity_cpu_percent` calls for longer.
   */
  integrity_interval: z
    .number({ error: "expected a number of seconds (0 turns the check off)" })
    .min(0, { error: "expected a number of seconds (0 turns the check off)" })
    .default(120),
  /** The largest share of one core those checks take on average, in percent. */
  integrity_cpu_percent: z
    .number({ error: "expected a percentage of one core (more than 0, at most 100)" })
    .positive({ error: "expected a percentage of one core (more than 0, at most 100)" })
    .max(100, { error: "expected a percentage of one core (more than 0, at most 100)" })
    .default(1),
  /**
   * How the gateway looks at providers nobody called lately: a TCP connect, `GET /models` with the
   * configured key, or not at all (a provider never called then stays unknown). None costs a token.
   */
  provider_probe: z
    .enum(["models", "connect", "off"], { error: "expected models, connect or off" })
    .default("connect"),
  provider_probe_interval: z
    .number({ error: "expected a number of seconds (more than 0)" })
    .positive({ error: "expected a number of seconds (more than 0)" })
    .default(60),
  provider_probe_timeout: z
    .number({ error: "expected a number of seconds (more than 0)" })
    .positive({ error: "expected a number of seconds (more than 0)" })
    .default(5),
});

/**
 * The profile's instances (each gateway or chat process on a shared PostgreSQL store): a clock off
 * from the database's by more than `clock_skew_max` seconds degrades health; by more than five
 * times that, a gateway refuses to start (leases and heartbeats are judged on the database's clock).
 */
const instances = z.strictObject({
  clock_skew_max: seconds().default(2),
});

const checkpoints = z.strictObject({
  enabled: flag().default(false),
  max_snapshots: positiveInt().default(50),
});

const configObject = z.strictObject({
  model: target.optional(),
  providers: z.record(z.string(), provider, { error: "expected a mapping of provider names" }).default({}),
  fallback: chain(),
  auxiliary: auxiliary.prefault({}),
  compression: compression.prefault({}),
  agent: agent.prefault({}),
  retry: retry.prefault({}),
  breaker: breaker.prefault({}),
  gateway: gatewaySchema.prefault({}),
  dashboard: dashboardSchema.prefault({}),
  logs: logs.prefault({}),
  health: health.prefault({}),
  instances: instances.prefault({}),
  checkpoints: checkpoints.prefault({}),
  store: storeSchema.prefault({}),
  tools: toolsSchema.prefault({}),
  cron: cronSchema.prefault({}),
  platforms: platformsSchema.prefault({}),
  telemetry: telemetrySchema.optional(),
  mcp: mcpSchema.prefault({}),
});

/**
 * The whole config.yaml. Cross-field checks run even when other keys are wrong, so one load
 * reports every problem at once; they read the parsed value defensively for that reason.
 */
export const configSchema = configObject.superRefine(checkProviderReferences, { when: () => true });

export type TenaxConfig = z.infer<typeof configSchema>;

/** The config Tenax runs with when a profile has no config.yaml. */
export function defaultConfig(): TenaxConfig {
  return configSchema.parse({});
}

type Ctx = z.core.$RefinementCtx<z.output<typeof configObject>>;

function checkProviderReferences(value: unknown, ctx: Ctx): void {
  if (!isRecord(value)) return;
  const configured = isRecord(value.providers) ? value.providers : {};
  const providers = Object.keys(configured);
  if (value.model === undefined && providers.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["model"],
      message:
        "missing; with providers configured, name the primary model as { provider: NAME, name: MODEL }",
    });
  }
  const refs: Array<{ target: unknown; path: PropertyKey[] }> = [{ target: value.model, path: ["model"] }];
  if (Array.isArray(value.fallback)) {
    value.fallback.forEach((t, i) => {
      refs.push({ target: t, path: ["fallback", i] });
    });
  }
  if (isRecord(value.auxiliary)) {
    for (const [task, settings] of Object.entries(value.auxiliary)) {
      if (!isRecord(settings)) continue;
      refs.push({ target: settings, path: ["auxiliary", task] });
      if (!Array.isArray(settings.fallback)) continue;
      settings.fallback.forEach((t, i) => {
        refs.push({ target: t, path: ["auxiliary", task, "fallback", i] });
      });
    }
  }
  for (const ref of refs) {
    if (!isRecord(ref.target) || typeof ref.target.provider !== "string") continue;
    const message = unknownProviderMessage(ref.target.provider, providers);
    if (message) {
      ctx.addIssue({ code: "custom", path: [...ref.path, "provider"], message });
      continue;
    }
    const unknownModel = unknownSimulatorModel(ref.target, configured);
    if (unknownModel) ctx.addIssue({ code: "custom", path: [...ref.path, "name"], message: unknownModel });
  }
  for (const [name, settings] of Object.entries(configured)) {
    if (!isRecord(settings) || settings.type === "simulator" || settings.script === undefined) continue;
    ctx.addIssue({
      code: "custom",
      path: ["providers", name, "script"],
      message: "only a provider of type simulator takes a script",
    });
  }
}

/**
 * A simulator knows exactly which models it serves, so a name it does not serve is caught here
 * rather than as a 404 at 3 a.m. Real providers are asked at call time: their catalogues change.
 */
function unknownSimulatorModel(target: Record<string, unknown>, configured: Record<string, unknown>) {
  if (typeof target.name !== "string" || typeof target.provider !== "string") return undefined;
  const settings = configured[target.provider];
  const builtIn = settings === undefined;
  if (!builtIn && (!isRecord(settings) || settings.type !== "simulator")) return undefined;
  const listed = !builtIn && isRecord(settings.models) ? Object.keys(settings.models) : [];
  const served = listed.length > 0 ? listed : Object.keys(DEFAULT_SIM_MODELS);
  if (served.includes(target.name)) return undefined;
  const where = builtIn ? "the built-in simulator" : `simulator provider "${target.provider}"`;
  return `"${target.name}" is not a model ${where} serves (it serves: ${served.join(", ")})${
    builtIn ? "" : `; list it under providers.${target.provider}.models`
  }`;
}

function unknownProviderMessage(name: string, providers: string[]): string | undefined {
  if (providers.length === 0) {
    if (name === BUILT_IN_SIMULATOR) return undefined;
    return `no providers are configured, so "${name}" names nothing; add it under providers, or use provider: ${BUILT_IN_SIMULATOR} for the built-in simulator`;
  }
  if (providers.includes(name)) return undefined;
  return `"${name}" is not a configured provider (configured: ${providers.join(", ")})`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The keys the schema allows at a key path (for "did you mean" hints), or undefined if unknown. */
export function allowedKeysAt(path: readonly PropertyKey[]): string[] | undefined {
  let schema: z.ZodType | undefined = configObject;
  for (const segment of [...path, null]) {
    schema = unwrap(schema);
    if (schema instanceof z.ZodObject) {
      if (segment === null) return Object.keys(schema.shape);
      schema = (schema.shape as Record<string, z.ZodType>)[String(segment)];
    } else if (schema instanceof z.ZodRecord) {
      schema = segment === null ? undefined : (schema.valueType as z.ZodType);
    } else if (schema instanceof z.ZodArray) {
      schema = segment === null ? undefined : (schema.element as z.ZodType);
    } else {
      return undefined;
    }
  }
  return undefined;
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let current = schema;
  while (
    current instanceof z.ZodOptional ||
    current instanceof z.ZodDefault ||
    current instanceof z.ZodPrefault
  ) {
    current = current.unwrap() as z.ZodType;
  }
  return current;
}
