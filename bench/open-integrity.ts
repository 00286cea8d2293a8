// Opening the big store and checking it: Store.open with the default integrity budget (past it
// the check reports "unknown" and goes on in a worker), Store.open with the check off, and
// store.checkIntegrity in quick and full mode, with the files' sizes. With a warm file cache
// first; then, at the very end of a run, with both files dropped from the cache.
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import type { ProfilePaths } from "../src/profile/paths.js";
import type { IntegrityResult } from "../src/store/integrity.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import { median } from "./stats.js";

interface OpenFigures {
  ms: number[];
  median_ms: number;
  status: string[];
  /** How long the state.db check took, to its end (past the budget it ends in the background). */
  state_check_ms: number[];
}

interface CheckFigures {
  /** How long store.checkIntegrity took to resolve (it also checks search.db, in parallel). */
  wall_ms: number[];
  median_wall_ms: number;
  /** The state.db check alone (IntegrityResult.duration_ms). */
  state_ms: number[];
  median_state_ms: number;
  status: string;
}

export interface OpenResult {
  /** Store.open with integrityCheckTimeoutMs left at its default. */
  open_default: OpenFigures;
  /** Store.open with integrityCheckTimeoutMs: 0 (no check). */
  open_no_check: { ms: number[]; median_ms: number };
  quick_check: CheckFigures;
  integrity_check: CheckFigures;
  /** PRAGMA quick_check on search.db, whole and table by table (raw SQL, for the diagnosis). */
  search_db_quick_check: { whole_ms: number; plain_tables_ms: number; fts_virtual_table_ms: number };
  bytes: Record<string, number>;
}

export interface ColdResult {
  /** store.checkIntegrity("quick") right after both files were dropped from the page cache. */
  quick_check: CheckFigures;
  /** Store.open with the default budget, files dropped from the cache first. */
  open_default: OpenFigures;
}

function size(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** The result of the open check that outlived its budget, when it arrives. */
function lateIntegrity(store: Store, timeoutMs: number): Promise<IntegrityResult | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve(null);
    }, timeoutMs);
    const off = store.on((event) => {
      if (event.type !== "store.integrity") return;
      clearTimeout(timer);
      off();
      resolve(event.result);
    });
  });
}

async function openWithDefaultBudget(paths: ProfilePaths, into: OpenFigures): Promise<void> {
  const started = performance.now();
  const store = await openStore(paths);
  into.ms.push(performance.now() - started);
  const first = store.health().integrity;
  into.status.push(first?.status ?? "none");
  // Wait for a check left running in the background, so it does not weigh on what follows.
  if (first?.status === "unknown") {
    const late = await lateIntegrity(store, 30 * 60_000);
    if (late !== null) into.state_check_ms.push(late.duration_ms);
  } else if (first !== null) {
    into.state_check_ms.push(first.duration_ms);
  }
  await releaseStore(store);
  into.median_ms = median(into.ms);
}

async function timeChecks(
  store: Store,
  mode: "quick" | "full",
  repeats: number,
  log: (line: string) => void,
): Promise<CheckFigures> {
  const out: CheckFigures = { wall_ms: [], median_wall_ms: 0, state_ms: [], median_state_ms: 0, status: "" };
  for (let i = 0; i < repeats; i++) {
    const started = performance.now();
    const result = await store.checkIntegrity(mode, 60 * 60_000);
    out.wall_ms.push(performance.now() - started);
    out.state_ms.push(result.duration_ms);
    out.status = result.status;
    log(
      `  ${mode} check: ${result.status}, state.db ${result.duration_ms} ms, call ${Math.round(out.wall_ms.at(-1) ?? 0)} ms`,
    );
  }
  out.median_wall_ms = median(out.wall_ms);
  out.median_state_ms = median(out.state_ms);
  return out;
}

/** Where search.db's quick_check spends its time: its plain tables, or FTS5's own index check. */
function splitSearchCheck(searchPath: string): OpenResult["search_db_quick_check"] {
  const db = new Database(searchPath, { readonly: true, fileMustExist: true });
  try {
    const timed = (pragma: string) => {
      const started = performance.now();
      db.pragma(pragma);
      return performance.now() - started;
    };
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
      .pluck()
      .all() as string[];
    const whole = timed("quick_check");
    const plain = tables.reduce((sum, t) => sum + timed(`quick_check("${t}")`), 0);
    return { whole_ms: whole, plain_tables_ms: plain, fts_virtual_table_ms: timed("quick_check(fts)") };
  } finally {
    db.close();
  }
}

export async function runOpenBench(
  paths: ProfilePaths,
  repeats: number,
  checkRepeats: number,
  log: (line: string) => void,
): Promise<OpenResult> {
  const openDefault: OpenFigures = { ms: [], median_ms: 0, status: [], state_check_ms: [] };
  for (let i = 0; i < repeats; i++) await openWithDefaultBudget(paths, openDefault);
  log(`  open with the default integrity budget: ${openDefault.status.join(", ")}`);

  const openNoCheck: OpenResult["open_no_check"] = { ms: [], median_ms: 0 };
  for (let i = 0; i < repeats; i++) {
    const started = performance.now();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    openNoCheck.ms.push(performance.now() - started);
    await releaseStore(store);
  }
  openNoCheck.median_ms = median(openNoCheck.ms);

  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    const quick = await timeChecks(store, "quick", checkRepeats, log);
    const full = await timeChecks(store, "full", checkRepeats, log);
    return {
      open_default: openDefault,
      open_no_check: openNoCheck,
      quick_check: quick,
      integrity_check: full,
      search_db_quick_check: splitSearchCheck(paths.search),
      bytes: {
        state_db: size(paths.state),
        state_db_wal: size(`${paths.state}-wal`),
        search_db: size(paths.search),
        search_db_wal: size(`${paths.search}-wal`),
      },
    };
  } finally {
    await releaseStore(store);
  }
}

/** Drop a file's pages from the OS cache (GNU dd asks the kernel with posix_fadvise); false if it cannot. */
function evict(path: string): boolean {
  try {
    execFileSync("dd", [`if=${path}`, "iflag=nocache", "count=0", "status=none"]);
    return true;
  } catch {
    return false;
  }
}

/** Cold cache figures; run last, because a check that outlives its budget goes on in the background. */
export async function runColdOpenBench(
  paths: ProfilePaths,
  log: (line: string) => void,
): Promise<ColdResult | null> {
  const evictBoth = () => evict(paths.state) && evict(paths.search);
  if (!evictBoth()) {
    log("  cannot drop the files from the page cache here (GNU dd needed): cold figures skipped");
    return null;
  }
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  let quick: CheckFigures;
  try {
    evictBoth();
    quick = await timeChecks(store, "quick", 1, log);
  } finally {
    await releaseStore(store);
  }
  evictBoth();
  const openDefault: OpenFigures = { ms: [], median_ms: 0, status: [], state_check_ms: [] };
  await openWithDefaultBudget(paths, openDefault);
  log(`  cold open with the default integrity budget: ${openDefault.status.join(", ")}`);
  return { quick_check: quick, open_default: openDefault };
}
