// The drill's MCP row on its own: a tool server that dies mid-call is caught by the MCP layer (it
// is started again), the turn completes with the model told the call may have run, and the next
// turn's call works.
import { describe, expect, it } from "vitest";
import { mcpScenarios } from "../src/drill/mcp-scenarios.js";
import { runDrill } from "../src/drill/runner.js";
import { DRILL_SCENARIOS } from "../src/drill/scenarios.js";

describe("the drill's MCP row", () => {
  it("is in the drill, after the chat platforms'", () => {
    const faults = DRILL_SCENARIOS.map((s) => s.fault);
    expect(faults[faults.indexOf("MCP server dies mid-call") - 1]).toMatch(/Telegram/);
  });

  it("passes, caught by the MCP layer", async () => {
    const report = await runDrill(mcpScenarios);
    const row = report.rows[0];
    expect(row, row?.detail).toMatchObject({ expected_layer: "mcp", caught_by: "mcp", result: "pass" });
    expect(row?.detail).toMatch(/restarts 1; second turn completed, the model read: worked/);
  }, 60_000);
});
