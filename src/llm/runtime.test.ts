// Building the model runtime from config: the built-in simulator when nothing is configured, an
// in-process simulator with its script, and every simulator stopped by close().
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { configSchema } from "../config/schema.js";
import type { RouteEvent } from "./route-events.js";
import { BUILT_IN_TARGET, createModelRuntime } from "./runtime.js";

const hello = { messages: [{ role: "user" as const, content: "ping from the runtime test" }] };

describe("createModelRuntime", () => {
  it("answers on the built-in simulator when no provider is configured", async () => {
    const rt = await createModelRuntime(configSchema.parse({}));
    try {
      expect(rt.builtIn).toBe(true);
      expect(rt.router.primary).toEqual(BUILT_IN_TARGET);
      const done = await rt.router.turn().complete(hello);
      expect(done).toMatchObject({ provider: "simulator", model: "echo", finish_reason: "stop" });
      expect(done.text).toContain("ping from the runtime test");
      expect(rt.router.limits(BUILT_IN_TARGET)?.context_window).toBe(128_000);
    } finally {
      await rt.close();
    }
  });

  it("starts an in-process simulator with the script from config, and close() stops it", async () => {
    const config = configSchema.parse({
      model: { provider: "sim", name: "small" },
      providers: {
        sim: {
          type: "simulator",
          models: { small: { context_window: 8_000, max_output_tokens: 1_000 } },
          script: [
            { type: "error", status: 503, body: { error: { message: "busy", type: "server_error" } } },
          ],
        },
      },
    });
    const rt = await createModelRuntime(config, { deps: fakeDeps() });
    const sim = rt.simulators.get("sim");
    expect(sim).toBeDefined();
    const events: RouteEvent[] = [];
    const done = await rt.router.turn().complete(hello, { onEvent: (e) => events.push(e) });
    expect(done.model).toBe("small");
    expect(sim?.requests().map((r) => r.status)).toEqual([503, 200]);
    expect(events.filter((e) => "layer" in e).map((e) => e.type)).toEqual(["retry"]);
    expect(rt.router.limits({ provider: "sim", model: "small" })).toEqual({
      context_window: 8_000,
      max_output_tokens: 1_000,
    });
    await rt.close();
    await expect(fetch(`${sim?.url}/models`)).rejects.toThrow();
  });
});
