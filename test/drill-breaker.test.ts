// The drill's breaker row on its own: a model failing with 503s is caught by its circuit breaker,
// and the next turn reaches the fallback without calling it.
import { describe, expect, it } from "vitest";
import { providerScenarios } from "../src/drill/provider-scenarios.js";
import { runDrill } from "../src/drill/runner.js";

describe("the drill's breaker row", () => {
  it("a model failing with 503s is caught by the breaker; the second turn sends it nothing", async () => {
    const row = providerScenarios.filter((s) => s.fault === "a model failing with 503s");
    const report = await runDrill(row);
    expect(report.rows[0], report.rows[0]?.detail).toMatchObject({
      expected_layer: "breaker",
      caught_by: "breaker",
      result: "pass",
    });
    expect(report.rows[0]?.detail).toMatch(
      /circuit opened.*turn 2 completed on backup with 0 call\(s\) to main; 2 call\(s\) to main where the retry budget alone makes 4/,
    );
  }, 30_000);
});
