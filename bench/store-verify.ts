// The store's continuous verification on a store of about 100 MB. First, what each way of checking
// the whole file once costs (SQLite's integrity_check and quick_check, the largest one-table
// slice, search.db whole and table by table, a walk of every page with the recovery's page parser,
// dbstat): the figures behind the verifier's design. Then the verifier as the gateway runs it (a
// real Scheduler, the default interval and CPU ceiling, an idle store): when each slice ran and for
// how long, how long a pass takes to cover both files, and the process's CPU time over the run
// against the wall clock. Last, four pages damaged at a random moment of a pass (as
// test/store-verify.test.ts damages them): the time until the store says it is corrupt.
import { statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Scheduler } from "../src/agent/scheduler.js";
import { checkIntegrity, type IntegrityResult } from "../src/store/integrity.js";
import { parseBtreePage } from "../src/store/recover/btree-page.js";
import { PageImage } from "../src/store/recover/page-image.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import { StoreVerifier, type VerifierPass, type VerifyTarget } from "../src/store/verifier.js";
import { btreePages, copyPage, overwritePages, swapChildren } from "../test/helpers/corrupt.js";
import { type Aim, mib, table } from "./report.js";
import { median } from "./stats.js";
import { copyFixture, type Fixture } from "./store-fixture.js";

export interface VerifySettings {
  /** Seconds the verifier runs on the idle store while its CPU time is measured. */
  seconds: number;
  /** Seconds the same process sits with the store open and no verifier: its CPU time without it. */
  baselineSeconds: number;
  /** health.integrity_interval and health.integrity_cpu_percent, as the gateway takes them. */
  intervalS: number;
  cpuPercent: number;
  /** Damage trials, each on a fresh copy of the store. */
  trials: number;
  /** Runs of each one-shot check (the median is kept). */
  engineRepeats: number;
}

export interface EngineRow {
  engine: string;
  wall_ms: number;
  cpu_ms: number;
  result: string;
}

export interface SliceRun {
  file: "state.db" | "search.db";
  /** ms since the run began. */
  at_ms: number;
  /** The check's wall time, its worker's start included. */
  ms: number;
  /** Its thread's CPU time (what the verifier paces itself by). */
  cpu_ms: number | null;
  status: string;
}

export interface VerifyResult {
  settings: VerifySettings;
  bytes: { state_db: number; search_db: number };
  pages: number;
  engines: EngineRow[];
  /** The same, with the store open and no verifier: what the process costs anyway. */
  baseline: { wall_ms: number; cpu_ms: number; cpu_share: number };
  run: {
    wall_ms: number;
    /** process.cpuUsage over the run: every thread of the process, the workers' checks included. */
    cpu_ms: number;
    cpu_share: number;
    slices: SliceRun[];
    passes: VerifierPass[];
    /** From one state.db slice's start to the next: every page is checked at least this often. */
    period_ms: number[];
    /** From a pass's first slice's start to its last slice's end: both files covered once. */
    cover_ms: number[];
  };
  /** ms from the damage to `store.corrupt`, one per trial (null: not found in time). */
  detect_ms: (number | null)[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function timed(engine: string, repeats: number, fn: () => string): EngineRow {
  const walls: number[] = [];
  const cpus: number[] = [];
  let result = "";
  for (let i = 0; i < repeats; i++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    result = fn();
    walls.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000);
  }
  return { engine, wall_ms: median(walls), cpu_ms: median(cpus), result };
}

function pragmaResult(db: Database.Database, pragma: string): string {
  const rows = db.pragma(pragma) as Record<string, unknown>[];
  return rows.map((r) => String(Object.values(r)[0])).join("; ");
}

/** Each way of checking the whole of a file once, on read-only connections in this thread. */
function engineCosts(state: string, search: string, repeats: number): EngineRow[] {
  const rows: EngineRow[] = [];
  const db = new Database(state, { readonly: true, fileMustExist: true });
  try {
    rows.push(
      timed("state.db: PRAGMA integrity_check (the verifier's)", repeats, () =>
        pragmaResult(db, "integrity_check"),
      ),
      timed("state.db: PRAGMA quick_check", repeats, () => pragmaResult(db, "quick_check")),
      timed("state.db: quick_check(messages), the largest one-table slice", repeats, () =>
        pragmaResult(db, "quick_check(messages)"),
      ),
      timed("state.db: dbstat, every b-tree page listed", repeats, () =>
        String(db.prepare("SELECT count(*) FROM dbstat").pluck().get()),
      ),
    );
  } finally {
    db.close();
  }
  rows.push(
    timed("state.db: every page parsed with recover/btree-page.ts", repeats, () => {
      const image = PageImage.open(state, null);
      try {
        let btree = 0;
        for (let p = 1; p <= image.pageCount; p++) {
          const page = image.page(p);
          if (page !== null && parseBtreePage(page, p, image.usable) !== null) btree++;
        }
        return `${btree} of ${image.pageCount} pages parse as b-tree pages`;
      } finally {
        image.close();
      }
    }),
  );
  const index = new Database(search, { readonly: true, fileMustExist: true });
  try {
    const plain = index
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
      .pluck()
      .all() as string[];
    rows.push(
      timed("search.db: PRAGMA quick_check (FTS5's own check included)", repeats, () =>
        pragmaResult(index, "quick_check"),
      ),
      timed("search.db: quick_check of each plain table (the verifier's)", repeats, () =>
        plain.map((t) => pragmaResult(index, `quick_check("${t}")`)).join("; "),
      ),
    );
  } finally {
    index.close();
  }
  return rows;
}

/** The Store as the verifier sees it, with each check's start and length noted. */
function timedTarget(store: Store, began: number, slices: SliceRun[]): VerifyTarget {
  const note = (file: SliceRun["file"], at: number, result: IntegrityResult | null) =>
    slices.push({
      file,
      at_ms: at - began,
      ms: performance.now() - at,
      cpu_ms: result?.cpu_ms ?? null,
      status: result?.status ?? "skipped",
    });
  return {
    checkState: async (mode, timeoutMs, announce) => {
      const at = performance.now();
      const result = await store.checkState(mode, timeoutMs, announce);
      note("state.db", at, result);
      return result;
    },
    checkSearch: async (timeoutMs, scope) => {
      const at = performance.now();
      const result = await store.checkSearch(timeoutMs, scope);
      note("search.db", at, result);
      return result;
    },
  };
}

function startVerifier(settings: VerifySettings, target: VerifyTarget) {
  const scheduler = new Scheduler();
  const verifier = new StoreVerifier({
    target,
    everyMs: settings.intervalS * 1000,
    cpuShare: settings.cpuPercent / 100,
    now: Date.now,
    wakeAt: (name, at, fn) => scheduler.at(name, at, fn),
  });
  verifier.start();
  return {
    verifier,
    stop: () => {
      verifier.stop();
      scheduler.stop();
    },
  };
}

async function measureBaseline(
  fixture: Fixture,
  workDir: string,
  seconds: number,
): Promise<VerifyResult["baseline"]> {
  const paths = copyFixture(fixture, join(workDir, "verify-baseline"));
  const store = await openStore(paths);
  const began = performance.now();
  const cpu = process.cpuUsage();
  const until = began + seconds * 1000;
  while (performance.now() < until) await sleep(Math.min(1000, until - performance.now()));
  const wall = performance.now() - began;
  const used = process.cpuUsage(cpu);
  await releaseStore(store);
  const cpuMs = (used.user + used.system) / 1000;
  return { wall_ms: wall, cpu_ms: cpuMs, cpu_share: cpuMs / wall };
}

async function measureRun(
  fixture: Fixture,
  workDir: string,
  settings: VerifySettings,
  log: (line: string) => void,
): Promise<VerifyResult["run"]> {
  const paths = copyFixture(fixture, join(workDir, "verify-run"));
  const store = await openStore(paths);
  const slices: SliceRun[] = [];
  const began = performance.now();
  const cpu = process.cpuUsage();
  const running = startVerifier(settings, timedTarget(store, began, slices));
  const passes: VerifierPass[] = [];
  let last: VerifierPass | null = null;
  const until = began + settings.seconds * 1000;
  while (performance.now() < until) {
    await sleep(Math.min(1000, until - performance.now()));
    const pass = running.verifier.health().last_pass;
    if (pass !== null && pass !== last) {
      passes.push({ ...pass });
      last = pass;
      log(`  pass: state.db ${pass.state}, search.db ${pass.search}, ${pass.busy_ms} ms of checks`);
    }
  }
  const wall = performance.now() - began;
  const used = process.cpuUsage(cpu);
  running.stop();
  await releaseStore(store);
  const starts = slices.filter((s) => s.file === "state.db").map((s) => s.at_ms);
  const period = starts.slice(1).map((at, i) => at - (starts[i] ?? 0));
  const cover: number[] = [];
  for (const s of slices) {
    if (s.file !== "search.db") continue;
    const state = [...slices].reverse().find((x) => x.file === "state.db" && x.at_ms <= s.at_ms);
    if (state) cover.push(s.at_ms + s.ms - state.at_ms);
  }
  const cpuMs = (used.user + used.system) / 1000;
  return {
    wall_ms: wall,
    cpu_ms: cpuMs,
    cpu_share: cpuMs / wall,
    slices,
    passes,
    period_ms: period,
    cover_ms: cover,
  };
}

/** The four pages of test/store-verify.test.ts: none meets a read as damage, none is written. */
function damageFourPages(state: string): void {
  const leaves = (name: string) =>
    btreePages(state, name)
      .filter((p) => p.pagetype === "leaf")
      .map((p) => p.pageno);
  const at = <T>(list: readonly T[], f: number) => list[Math.floor(list.length * f)] as T;
  const table = leaves("messages");
  const byUid = leaves("sqlite_autoindex_messages_1");
  const bySeq = leaves("sqlite_autoindex_messages_2");
  const interior = btreePages(state, "messages").filter((p) => p.pagetype === "internal");
  copyPage(state, at(table, 0.7), at(table, 0.4));
  overwritePages(state, [at(bySeq, 0.4)], "garbage", 24);
  copyPage(state, at(byUid, 0.6), at(byUid, 0.3));
  swapChildren(state, at(interior, 0.5).pageno);
}

async function detectTrial(
  fixture: Fixture,
  workDir: string,
  settings: VerifySettings,
  trial: number,
  log: (line: string) => void,
): Promise<number | null> {
  const paths = copyFixture(fixture, join(workDir, `verify-trial-${trial}`));
  const store = await openStore(paths);
  const running = startVerifier(settings, store);
  try {
    // Anywhere in a pass: the verifier's slots repeat every interval.
    await sleep(Math.random() * settings.intervalS * 1000);
    const found = new Promise<number>((resolve) => {
      const off = store.on((event) => {
        if (event.type !== "store.corrupt") return;
        off();
        resolve(performance.now());
      });
    });
    const damagedAt = performance.now();
    damageFourPages(paths.state);
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), (2 * settings.intervalS + 60) * 1000);
    });
    const at = await Promise.race([found, limit]);
    clearTimeout(timer);
    const after = at === null ? null : at - damagedAt;
    log(
      `  trial ${trial + 1}: ${after === null ? "not found" : `found after ${(after / 1000).toFixed(1)} s`}`,
    );
    return after;
  } finally {
    running.stop();
    await releaseStore(store);
  }
}

export async function runVerifyBench(
  fixture: Fixture,
  workDir: string,
  settings: VerifySettings,
  log: (line: string) => void,
): Promise<VerifyResult> {
  const { state, search } = fixture.paths;
  log("  each way of checking the whole file once");
  const engines = engineCosts(state, search, settings.engineRepeats);
  for (const worker of [
    {
      file: state,
      mode: "full" as const,
      scope: "file" as const,
      label: "state.db: the verifier's slice (a worker's thread, its start included)",
    },
    {
      file: search,
      mode: "quick" as const,
      scope: "tables" as const,
      label: "search.db: the verifier's slice (a worker's thread, its start included)",
    },
  ]) {
    const runs = [];
    for (let i = 0; i < settings.engineRepeats; i++)
      runs.push(
        await checkIntegrity(worker.file, { mode: worker.mode, scope: worker.scope, timeoutMs: 10 * 60_000 }),
      );
    engines.push({
      engine: worker.label,
      wall_ms: median(runs.map((r) => r.duration_ms)),
      cpu_ms: median(runs.map((r) => r.cpu_ms ?? Number.NaN)),
      result: runs.at(-1)?.status ?? "",
    });
  }
  log(`  the process with the store open and no verifier, for ${settings.baselineSeconds} s`);
  const baseline = await measureBaseline(fixture, workDir, settings.baselineSeconds);
  log(
    `  the verifier for ${settings.seconds} s, every ${settings.intervalS} s within ${settings.cpuPercent}%`,
  );
  const run = await measureRun(fixture, workDir, settings, log);
  const detect: (number | null)[] = [];
  for (let i = 0; i < settings.trials; i++)
    detect.push(await detectTrial(fixture, workDir, settings, i, log));
  const probe = PageImage.open(state, null);
  const pages = probe.pageCount;
  probe.close();
  return {
    settings,
    bytes: { state_db: statSync(state).size, search_db: statSync(search).size },
    pages,
    engines,
    baseline,
    run,
    detect_ms: detect,
  };
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

export function verifyLines(r: VerifyResult): string[] {
  const found = r.detect_ms.filter((d): d is number => d !== null);
  return [
    `\nstore verification: state.db ${mib(r.bytes.state_db)} (${r.pages} pages), search.db ${mib(r.bytes.search_db)}`,
    table(
      ["one whole check", "wall ms", "CPU ms", "result"],
      r.engines.map((e) => [
        e.engine,
        e.wall_ms.toFixed(1),
        Number.isNaN(e.cpu_ms) ? "" : e.cpu_ms.toFixed(1),
        e.result.slice(0, 60),
      ]),
    ),
    `the verifier, every ${r.settings.intervalS} s within ${r.settings.cpuPercent}% of a core, ${seconds(r.run.wall_ms)} s on the idle store:`,
    table(
      ["slice", "at s", "wall ms", "CPU ms", "result"],
      r.run.slices.map((s) => [
        s.file,
        seconds(s.at_ms),
        s.ms.toFixed(0),
        s.cpu_ms === null ? "" : String(s.cpu_ms),
        s.status,
      ]),
    ),
    `  every page checked again after (state.db slice to slice) ${r.run.period_ms.map(seconds).join(", ")} s; both files covered in ${r.run.cover_ms.map(seconds).join(", ")} s`,
    `  process CPU ${r.run.cpu_ms.toFixed(0)} ms over ${seconds(r.run.wall_ms)} s of wall: ${(r.run.cpu_share * 100).toFixed(3)}% of one core; the checks' threads ${r.run.slices.reduce((n, s) => n + (s.cpu_ms ?? 0), 0)} ms`,
    `  the same process with the store open and no verifier: ${(r.baseline.cpu_share * 100).toFixed(3)}% (${r.baseline.cpu_ms.toFixed(0)} ms over ${seconds(r.baseline.wall_ms)} s)`,
    `  damage (four pages) found after: ${r.detect_ms.map((d) => (d === null ? "never" : `${seconds(d)} s`)).join(", ")}${found.length > 0 ? ` (max ${seconds(Math.max(...found))} s)` : ""}`,
  ];
}

export function judgeVerifyAims(r: VerifyResult): Aim[] {
  const worstPeriod = Math.max(0, ...r.run.period_ms);
  const detected = r.detect_ms.every((d) => d !== null);
  const worstDetect = Math.max(0, ...r.detect_ms.map((d) => d ?? Number.POSITIVE_INFINITY));
  return [
    {
      aim: "every page of a 100 MB store checked within 5 minutes",
      met: r.run.period_ms.length > 0 && worstPeriod <= 300_000,
      detail: `state.db ${mib(r.bytes.state_db)}: checked again every ${seconds(worstPeriod)} s at worst; both files covered in ${seconds(Math.max(0, ...r.run.cover_ms))} s`,
    },
    {
      aim: "the checks take well under 2% of one core",
      met: r.run.cpu_share < 0.01,
      detail: `${(r.run.cpu_share * 100).toFixed(3)}% (process CPU ${r.run.cpu_ms.toFixed(0)} ms over ${seconds(r.run.wall_ms)} s)`,
    },
    {
      aim: "damage to pages no write touches reported within 5 minutes",
      met: detected && worstDetect <= 300_000,
      detail: `${r.detect_ms.length} trials: ${r.detect_ms.map((d) => (d === null ? "never" : `${seconds(d)} s`)).join(", ")}`,
    },
  ];
}
