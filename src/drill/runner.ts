// The drill's runner: each scenario in its own scratch TENAX_HOME under a deadline, with the time
// from fault injection to the first sign of detection and the layer that gave that sign, as
// reported by what happened (events, health, turn status), never assumed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

export interface DrillRow {
  fault: string;
  expected_layer: string;
  /** The layer whose event, health component or turn status first showed the fault; null when none did. */
  caught_by: string | null;
  /** From injecting the fault to that first sign, in milliseconds. */
  detect_ms: number | null;
  result: "pass" | "fail";
  detail: string;
}

export interface DrillReport {
  ok: boolean;
  /** The scratch folder that held every scenario's TENAX_HOME. */
  scratch: string;
  rows: DrillRow[];
}

/** What a scenario is given: its own scratch home, an abort signal for its deadline, and the marks it sets. */
export interface ScenarioContext {
  /** A fresh, empty folder to use as TENAX_HOME; nothing else is ever read or written. */
  readonly home: string;
  readonly signal: AbortSignal;
  /** The fault goes in now: detection time is measured from the last call. */
  injected(): void;
  /**
   * A layer showed the fault. The first call times the detection; the last one names the layer
   * that caught it (a retry that gave up and a fallback that answered: the fallback caught it).
   */
  caught(layer: string): void;
  /** Run at the end whatever happens (deadline included), last registered first. */
  defer(cleanup: () => Promise<unknown> | unknown): void;
}

export interface ScenarioOutcome {
  /** Whether everything the scenario checks after detection held (the turn completed, ...). */
  ok: boolean;
  detail: string;
}

export interface Scenario {
  fault: string;
  expected_layer: string;
  /** This scenario's own deadline (ms), for one that must wait out a fault longer than the default. */
  deadline_ms?: number;
  run(context: ScenarioContext): Promise<ScenarioOutcome>;
}

export interface DrillOptions {
  /** Per scenario, in milliseconds; overrides each scenario's own deadline_ms. */
  deadlineMs?: number;
  /** Keep the scratch homes for inspection. */
  keep?: boolean;
  /** Called once the scratch folder exists, before the first scenario. */
  onStart?: (scratch: string) => void;
  /** Called as each row starts, before its fault goes in (for progress output). */
  onRowStart?: (start: RowStart) => void;
  /** Called as each row is known (for progress output). */
  onRow?: (row: DrillRow) => void;
}

/** A row about to run: which of how many, its fault and layer, and how long it may take. */
export interface RowStart {
  /** From 0. */
  index: number;
  total: number;
  fault: string;
  expected_layer: string;
  deadline_ms: number;
}

const DEFAULT_DEADLINE_MS = 25_000;
/** How long cleanups get after a scenario, so that a stuck one never hangs the drill. */
const CLEANUP_BUDGET_MS = 5_000;

export async function runDrill(
  scenarios: readonly Scenario[],
  options: DrillOptions = {},
): Promise<DrillReport> {
  const scratch = mkdtempSync(join(tmpdir(), "tenax-drill-"));
  const rows: DrillRow[] = [];
  options.onStart?.(scratch);
  try {
    for (const [i, scenario] of scenarios.entries()) {
      const home = join(scratch, `${String(i + 1).padStart(2, "0")}-${slug(scenario.fault)}`);
      const deadline = options.deadlineMs ?? scenario.deadline_ms ?? DEFAULT_DEADLINE_MS;
      options.onRowStart?.({
        index: i,
        total: scenarios.length,
        fault: scenario.fault,
        expected_layer: scenario.expected_layer,
        deadline_ms: deadline,
      });
      const row = await runScenario(scenario, home, deadline);
      rows.push(row);
      options.onRow?.(row);
    }
  } finally {
    if (!options.keep) rmSync(scratch, { recursive: true, force: true });
  }
  return { ok: rows.every((r) => r.result === "pass"), scratch, rows };
}

async function runScenario(scenario: Scenario, home: string, deadlineMs: number): Promise<DrillRow> {
  const controller = new AbortController();
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  // Held in one object so that what the scenario's callbacks set is read back without casts.
  const marks: { injectedAt: number | null; caught: { layer: string; at: number } | null } = {
    injectedAt: null,
    caught: null,
  };
  const context: ScenarioContext = {
    home: mkdtempSync(`${home}-`),
    signal: controller.signal,
    injected: () => {
      marks.injectedAt = performance.now();
    },
    caught: (layer) => {
      marks.caught = { layer, at: marks.caught?.at ?? performance.now() };
    },
    defer: (cleanup) => cleanups.push(cleanup),
  };
  let outcome: ScenarioOutcome;
  let timer: NodeJS.Timeout | undefined;
  try {
    outcome = await Promise.race([
      scenario.run(context),
      new Promise<ScenarioOutcome>((resolve) => {
        timer = setTimeout(() => {
          controller.abort();
          resolve({ ok: false, detail: `no result within the ${deadlineMs / 1000} s deadline` });
        }, deadlineMs);
      }),
    ]);
  } catch (error) {
    outcome = {
      ok: false,
      detail: `the scenario failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  } finally {
    clearTimeout(timer);
    controller.abort();
    await runCleanups(cleanups);
  }
  const found = marks.caught;
  const start = marks.injectedAt;
  const layerOk = found?.layer === scenario.expected_layer;
  const detail = layerOk
    ? outcome.detail
    : `${found ? `caught by ${found.layer}, expected ${scenario.expected_layer}` : "no layer reported the fault"}; ${outcome.detail}`;
  return {
    fault: scenario.fault,
    expected_layer: scenario.expected_layer,
    caught_by: found?.layer ?? null,
    detect_ms: found && start !== null ? Math.max(0, Math.round(found.at - start)) : null,
    result: outcome.ok && layerOk ? "pass" : "fail",
    detail,
  };
}

async function runCleanups(cleanups: Array<() => Promise<unknown> | unknown>): Promise<void> {
  for (const cleanup of cleanups.reverse()) {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(cleanup),
        new Promise((resolve) => {
          timer = setTimeout(resolve, CLEANUP_BUDGET_MS);
        }),
      ]);
    } catch {
      // A cleanup that fails must not hide the row's result; the scratch folder goes anyway.
    } finally {
      clearTimeout(timer);
    }
  }
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 30);
}
