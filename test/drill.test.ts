// `tenax drill`: every fault is caught by the layer that should catch it, the report has its
// documented shape, nothing is written to the user's TENAX_HOME, and a row that fails (or hangs)
// makes the drill fail rather than pass or hang.
import { existsSync, readdirSync } from "node:fs";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { drill } from "../src/cli/commands/drill.js";
import { createOutput } from "../src/cli/output.js";
import { runDrill, type Scenario } from "../src/drill/runner.js";
import { DRILL_SCENARIOS } from "../src/drill/scenarios.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { tempHome } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

interface Row {
  fault: string;
  expected_layer: string;
  caught_by: string | null;
  detect_ms: number | null;
  result: string;
  detail: string;
}

const EXPECTED: Record<string, string> = {
  "rate limit": "retry",
  "dead first key": "credentials",
  "persistent overload": "fallback",
  "stream dropped": "retry",
  "a model failing with 503s": "breaker",
  "compression call hangs": "compression",
  "interrupt during a tool": "agent",
  "a stalled turn": "lifecycle",
  "killed (SIGKILL) mid-turn": "lifecycle",
  "during a cron run": "cron",
  "missed window": "cron",
  "Telegram Bot API down": "platforms",
  "MCP server dies mid-call": "mcp",
  "state.db corrupted": "store",
  "search index damaged": "store",
};

describe("tenax drill", () => {
  it("--json: every fault is caught by its expected layer, exit 0, and the user's home is untouched", async () => {
    const home = tempHome();
    // The Telegram row with a 4 s outage: its 20 s default is for people, not for this test.
    const run = await tenaxAsync(home, ["drill", "--json"], {
      env: { TENAX_DRILL_TELEGRAM_OUTAGE_MS: "4000" },
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const report = JSON.parse(run.stdout) as { ok: boolean; scratch: string; rows: Row[] };
    expect(report.ok).toBe(true);
    expect(report.rows).toHaveLength(Object.keys(EXPECTED).length);
    for (const [fault, layer] of Object.entries(EXPECTED)) {
      const row = report.rows.find((r) => r.fault.includes(fault));
      expect(row, `no row for ${fault}`).toBeDefined();
      expect(row).toMatchObject({ expected_layer: layer, caught_by: layer, result: "pass" });
      expect(typeof row?.detect_ms).toBe("number");
      expect(row?.detail.length).toBeGreaterThan(10);
    }
    expect(Object.keys(report.rows[0] ?? {}).sort()).toEqual(
      ["caught_by", "detail", "detect_ms", "expected_layer", "fault", "result"].sort(),
    );
    // Nothing in the user's home (TENAX_HOME and HOME both point there), and the scratch is gone.
    expect(readdirSync(home)).toEqual([]);
    expect(existsSync(report.scratch)).toBe(false);
  }, 180_000);

  it("prints the table and where the scratch homes were", async () => {
    const home = tempHome();
    const run = await tenaxAsync(home, ["drill", "--only", "search index"]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/fault\s+expected layer\s+caught by\s+time to detect\s+result/);
    expect(run.stdout).toMatch(
      /search index damaged under a running gateway\s+store\s+store\s+\d+ ms\s+pass/,
    );
    expect(run.stdout).toMatch(/scratch homes under \/\S+tenax-drill-/);
    expect(readdirSync(home)).toEqual([]);
  });

  it("exits 2 when --only matches no fault", async () => {
    const run = await tenaxAsync(tempHome(), ["drill", "--only", "no such fault"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/no drill fault matches "no such fault"/);
  });
});

describe("the drill runner", () => {
  const search = DRILL_SCENARIOS.find((s) => s.fault.includes("search index"));

  it("a row whose check fails, or that another layer caught, makes the drill exit 1", async () => {
    const brokenCheck: Scenario = {
      fault: "a check that does not hold",
      expected_layer: "retry",
      async run(context) {
        context.injected();
        context.caught("retry");
        return { ok: false, detail: "the turn did not complete" };
      },
    };
    const wrongLayer: Scenario = {
      fault: "caught by the wrong layer",
      expected_layer: "fallback",
      async run(context) {
        context.injected();
        context.caught("retry");
        return { ok: true, detail: "completed" };
      },
    };
    const write = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    let code: number;
    let document = "";
    try {
      code = await drill(createOutput(true), [search as Scenario, brokenCheck, wrongLayer], false);
      document = String(write.mock.calls.at(-1)?.[0]);
    } finally {
      write.mockRestore();
    }
    expect(code).toBe(1);
    const printed = JSON.parse(document) as { ok: boolean; rows: Row[] };
    expect(printed.ok).toBe(false);
    expect(printed.rows.map((r) => r.result)).toEqual(["pass", "fail", "fail"]);
    expect(printed.rows[2]).toMatchObject({ caught_by: "retry", expected_layer: "fallback" });
    expect(printed.rows[2]?.detail).toMatch(/caught by retry, expected fallback/);
  });

  it("a scenario that hangs fails at its deadline and its cleanups still run", async () => {
    let cleaned = false;
    const hangs: Scenario = {
      fault: "hangs forever",
      expected_layer: "retry",
      run(context) {
        context.defer(() => {
          cleaned = true;
        });
        return new Promise(() => {});
      },
    };
    const started = Date.now();
    const report = await runDrill([hangs], { deadlineMs: 300 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(report.ok).toBe(false);
    expect(report.rows[0]).toMatchObject({ result: "fail", caught_by: null, detect_ms: null });
    expect(report.rows[0]?.detail).toMatch(/deadline/);
    expect(cleaned).toBe(true);
  });
});
