// The router reading the breaker, over real HTTP to two simulators on fake time: a model failing
// with 503s opens its circuit, after which turns go straight to the fallback without spending the
// retry budget on it; with no fallback left, a call fails at once with `circuit_open`, saying when
// the model is tried again; after the cool-down one probe goes, and its success closes the circuit.
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { err, hello, open, recorder, rejected, sim } from "../../test/helpers/router.js";
import { configSchema } from "../config/schema.js";
import { CircuitBreakers, MemoryBreakerRecords } from "./breaker.js";
import { createModelRuntime } from "./runtime.js";

const TURNS = 6;
const ATTEMPTS = 4;

async function setup(options: { fallback: boolean; breaker: boolean }) {
  const bad = await sim();
  const good = await sim();
  bad.script(Array.from({ length: 100 }, () => err(503)));
  const deps = fakeDeps();
  const config = configSchema.parse({
    model: { provider: "bad", name: "echo" },
    providers: {
      bad: { type: "openai", base_url: bad.url, api_keys: ["sk-bad"] },
      good: { type: "openai", base_url: good.url, api_keys: ["sk-good"] },
    },
    fallback: options.fallback ? [{ provider: "good", name: "echo" }] : [],
    retry: { max_attempts: ATTEMPTS },
  });
  const breaker = new CircuitBreakers({
    records: new MemoryBreakerRecords(),
    settings: { enabled: options.breaker, failures: 4, cooldown_ms: 60_000 },
    now: () => deps.clock.now(),
  });
  const rt = await createModelRuntime(config, { deps, breaker });
  open.push(rt);
  return { bad, good, deps, rt };
}

describe("the router and an open circuit", () => {
  it("later turns reach the fallback without calling the failing model; without the breaker each pays the whole budget", async () => {
    const counts: Record<string, number> = {};
    for (const withBreaker of [false, true]) {
      const { bad, good, rt } = await setup({ fallback: true, breaker: withBreaker });
      for (let turn = 0; turn < TURNS; turn++) {
        const done = await rt.router.turn().complete(hello);
        expect(done.provider).toBe("good");
      }
      expect(good.requests()).toHaveLength(TURNS);
      counts[withBreaker ? "with" : "without"] = bad.requests().length;
    }
    expect(counts.without).toBe(TURNS * ATTEMPTS);
    // The first turn's attempts open it; every later turn goes straight to the fallback.
    expect(counts.with).toBe(ATTEMPTS);
    expect(counts.with).toBeLessThanOrEqual((counts.without ?? 0) / 2);
  });

  it("says the fallback was for an open circuit, and spends no retry on it", async () => {
    const { rt } = await setup({ fallback: true, breaker: true });
    await rt.router.turn().complete(hello);
    const rec = recorder();
    await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(rec.types()).toEqual(["fallback"]);
    expect(rec.status()[0]).toMatchObject({ reason: "circuit_open", from: { provider: "bad" } });
  });

  it("with no fallback fails at once with circuit_open, its hint and retry-after saying when it is tried again", async () => {
    const { bad, deps, rt } = await setup({ fallback: false, breaker: true });
    const first = recorder();
    await rejected(rt.router.turn().complete(hello, { onEvent: first.onEvent }));
    expect(first.types()).toContain("breaker_opened");
    const before = bad.requests().length;
    deps.advance(10_000);
    const error = await rejected(rt.router.turn().complete(hello));
    expect(bad.requests()).toHaveLength(before);
    expect(error.code).toBe("circuit_open");
    expect(error.classified).toMatchObject({ reason: "circuit_open", retry_after_ms: 50_000 });
    expect(error.hint).toMatch(/one probe call at \S+Z \(in 50 s\)/);
  });

  it("after the cool-down one probe goes; its success closes the circuit", async () => {
    const { bad, deps, rt } = await setup({ fallback: false, breaker: true });
    await rejected(rt.router.turn().complete(hello));
    bad.reset();
    deps.advance(60_000);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("bad");
    expect(rec.types()).toEqual(["breaker_half_open", "breaker_closed"]);
    expect((await rt.router.breaker?.circuits([{ provider: "bad", model: "echo" }]))?.[0]?.circuit).toBe(
      "closed",
    );
  });
});
