// The provider layers' faults, each through the simulator and the real agent turn: a rate limit
// (retry), a dead first key (credentials rotate), a persistent overload (fallback, then the
// primary again on the next turn), a stream dropped mid-reply (retry from the start) and a model
// failing with 503s (its breaker opens, and the next turn skips it).

import type { Scenario } from "./runner.js";
import { scratchSession } from "./scratch.js";
import { eventTrail, requestedModels, watchedTurn } from "./watched-turn.js";

const rateLimit: Scenario = {
  fault: "rate limit (429, retry-after 1 s)",
  expected_layer: "retry",
  async run(context) {
    // One key, so the retry layer (not the key pool) has to wait it out.
    const { sim, opened, session } = await scratchSession(
      context,
      "rate limit",
      {},
      { keys: ["drill-single-key"] },
    );
    sim.script([
      { type: "error", status: 429, headers: { "retry-after": "1" } },
      { type: "reply", text: "answered after the wait" },
    ]);
    context.injected();
    const { result, events } = await watchedTurn(context, opened, session, "hello");
    const retried = events.some((e) => e.type === "retry");
    return {
      ok: result.status === "completed" && retried && result.reply === "answered after the wait",
      detail: `turn ${result.status}; ${eventTrail(events)}`,
    };
  },
};

const deadKey: Scenario = {
  fault: "dead first key (401)",
  expected_layer: "credentials",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "dead key");
    sim.script([
      {
        type: "error",
        status: 401,
        body: { error: { message: "invalid api key", type: "invalid_request_error" } },
      },
      { type: "reply", text: "answered with the second key" },
    ]);
    context.injected();
    const { result, events } = await watchedTurn(context, opened, session, "hello");
    const keys = sim.requests().map((r) => String(r.headers.authorization ?? ""));
    const rotated = keys.length === 2 && keys[0] !== keys[1];
    return {
      ok: result.status === "completed" && rotated,
      detail: `turn ${result.status}; ${rotated ? "second request used the second key" : `keys used: ${keys.length}`}; ${eventTrail(events)}`,
    };
  },
};

const overload: Scenario = {
  fault: "persistent overload (503 on every try)",
  expected_layer: "fallback",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "overload");
    const overloaded = { type: "error", status: 503 } as const;
    // Every attempt the retry layer makes on the primary is refused; the fallback answers.
    sim.script(Array.from({ length: opened.agent.options.config.retry.max_attempts }, () => overloaded));
    context.injected();
    const first = await watchedTurn(context, opened, session, "hello");
    sim.script([]);
    const before = sim.requests().length;
    const second = await watchedTurn(context, opened, session, "and again", { watch: false });
    const models = requestedModels(sim.requests());
    const backOnPrimary = models[before] === "main";
    return {
      ok:
        first.result.status === "completed" &&
        first.result.model?.model === "backup" &&
        second.result.status === "completed" &&
        backOnPrimary,
      detail: `turn 1 ${first.result.status} on ${first.result.model?.provider}/${first.result.model?.model}; turn 2 ${backOnPrimary ? "back on the primary" : `asked ${models[before]}`}; ${eventTrail(first.events)}`,
    };
  },
};

const droppedStream: Scenario = {
  fault: "stream dropped mid-reply",
  expected_layer: "retry",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "dropped stream");
    sim.script([
      { type: "drop", after_chunks: 2 },
      { type: "reply", text: "the whole reply" },
    ]);
    context.injected();
    const { result, events } = await watchedTurn(context, opened, session, "hello");
    return {
      ok: result.status === "completed" && result.reply === "the whole reply",
      detail: `turn ${result.status}, reply ${JSON.stringify(result.reply)}; ${eventTrail(events)}`,
    };
  },
};

/**
 * The breaker: the primary fails every attempt of the first turn with a 503, which opens its
 * circuit (two failures here); the second turn goes straight to the fallback, sending the primary
 * nothing. It passes with the circuit opened, both turns answered by the fallback, and at most half
 * the primary's calls the retry budget alone would make over the two turns.
 */
const failingModel: Scenario = {
  fault: "a model failing with 503s",
  expected_layer: "breaker",
  async run(context) {
    const { sim, opened, session, config } = await scratchSession(context, "failing model", {
      breaker: { failures: 2, cooldown: 300 },
    });
    const attempts = config.retry.max_attempts;
    sim.script(Array.from({ length: attempts }, () => ({ type: "error", status: 503 }) as const));
    context.injected();
    // Only the breaker's events name the layer: the retries and the fallback around them are expected.
    const breaker = (e: { type: string }) => {
      if (e.type.startsWith("breaker_")) context.caught("breaker");
    };
    const first = await watchedTurn(context, opened, session, "hello", { watch: false, onEvent: breaker });
    const before = requestedModels(sim.requests()).filter((m) => m === "main").length;
    const second = await watchedTurn(context, opened, session, "and again", {
      watch: false,
      onEvent: breaker,
    });
    const calls = requestedModels(sim.requests()).filter((m) => m === "main").length;
    const budget = 2 * attempts;
    const opened_ = first.events.some((e) => e.type === "breaker_opened");
    return {
      ok:
        opened_ &&
        first.result.model?.model === "backup" &&
        second.result.model?.model === "backup" &&
        second.result.status === "completed" &&
        calls === before &&
        calls * 2 <= budget,
      detail: `turn 1 ${first.result.status} on ${first.result.model?.model} after ${before} call(s) to main (${opened_ ? "circuit opened" : "circuit stayed closed"}); turn 2 ${second.result.status} on ${second.result.model?.model} with ${calls - before} call(s) to main; ${calls} call(s) to main where the retry budget alone makes ${budget}; ${eventTrail(first.events)}`,
    };
  },
};

export const providerScenarios: readonly Scenario[] = [
  rateLimit,
  deadKey,
  overload,
  droppedStream,
  failingModel,
];
