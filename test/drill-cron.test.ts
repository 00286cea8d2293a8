// The drill's cron rows on their own: a gateway killed during a job's run and a 3-hour downtime
// are each caught by the cron layer, and every check after detection holds (one run record per
// occurrence, the same turn resumed, the catch-up run and the skipped ones with their reasons).
import { beforeAll, describe, expect, it } from "vitest";
import { cronScenarios } from "../src/drill/cron-scenarios.js";
import { runDrill } from "../src/drill/runner.js";
import { DRILL_SCENARIOS } from "../src/drill/scenarios.js";
import { requireBuild } from "./helpers/cli.js";

beforeAll(() => requireBuild());

describe("the drill's cron rows", () => {
  it("are in the drill, after the gateway's", () => {
    const faults = DRILL_SCENARIOS.map((s) => s.fault);
    const gateway = faults.indexOf("gateway killed (SIGKILL) mid-turn");
    expect(faults.slice(gateway + 1, gateway + 3)).toEqual(cronScenarios.map((s) => s.fault));
  });

  it("a kill during a run and a missed window both pass, caught by cron", async () => {
    const report = await runDrill(cronScenarios);
    expect(report.rows.map((r) => r.fault)).toEqual([
      "gateway killed (SIGKILL) during a cron run",
      "a missed window (the gateway was down for 3 hours)",
    ]);
    for (const row of report.rows) {
      expect(row, row.detail).toMatchObject({ expected_layer: "cron", caught_by: "cron", result: "pass" });
      expect(typeof row.detect_ms).toBe("number");
    }
    expect(report.rows[0]?.detail).toMatch(
      /1 run record\(s\) for the occurrence \(1 in all\), ok, resumed 1 time\(s\), same turn/,
    );
    expect(report.rows[0]?.detail).toMatch(/2 model call\(s\)/);
    expect(report.rows[0]?.detail).toMatch(/60 s after the occurrence/);
    expect(report.rows[1]?.detail).toMatch(/1 catch-up run\(s\) \(ok\)/);
    expect(report.rows[1]?.detail).toMatch(/2 skipped: missed by .* grace window/);
    expect(report.ok).toBe(true);
  }, 60_000);
});
