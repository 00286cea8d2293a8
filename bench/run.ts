// `npm run bench`: store write throughput, search latency, open and integrity check, and reader
// figures, printed as tables and written as JSON to bench/out. Every knob is an environment
// variable (see BENCH_* below); BENCH_MESSAGES sets the size of the search store (default 1M).
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { openStore, releaseStore } from "../src/store/registry.js";
import { runAppendSizes, type SizeRow } from "./append-sizes.js";
import { describeMachine } from "./machine.js";
import { type ColdResult, type OpenResult, runColdOpenBench, runOpenBench } from "./open-integrity.js";
import { type ReaderResult, runReaderBench } from "./reader-open.js";
import { int, judgeAims, mib, ms, table } from "./report.js";
import { diagnoseSearch, type SearchDiagnosis } from "./search-diagnosis.js";
import { QUERY_KINDS, queryMix, runSearchBench, type SearchResultSet } from "./search-latency.js";
import { median } from "./stats.js";
import { ensureFixture } from "./store-fixture.js";
import { diagnoseWrites, type WriteDiagnosis } from "./write-diagnosis.js";
import { runWriteBench, type WriteResult } from "./write-throughput.js";

const count = (fallback: number) =>
  z.preprocess(
    (v) => (typeof v === "string" ? v.replace(/[_,]/g, "") : v),
    z.coerce.number().int().positive().default(fallback),
  );

const SUITES = ["write", "sizes", "search", "open", "reader"] as const;

const Env = z.object({
  BENCH_MESSAGES: count(1_000_000),
  BENCH_BASE_MESSAGES: count(50_000),
  BENCH_ROUNDS: count(5),
  BENCH_TRIAL_SECONDS: z.coerce.number().positive().default(2),
  BENCH_TRIAL_MESSAGES: count(50_000),
  BENCH_QUERIES: count(20),
  BENCH_SEARCH_ROUNDS: count(10),
  BENCH_OPEN_REPEATS: count(3),
  BENCH_CHECK_REPEATS: count(3),
  BENCH_READER_REPEATS: count(20),
  BENCH_ONLY: z
    .string()
    .default(SUITES.join(","))
    .transform((s) => s.split(",").map((x) => x.trim()))
    .pipe(z.array(z.enum(SUITES))),
  BENCH_OUT: z.string().default("bench/out"),
});

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The commit measured, and whether src/store had changes on top of it (read-only git commands). */
function sourceVersion(): { commit: string; store_changes: string[] } {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
    const changes = git("status", "--porcelain", "--", "src/store");
    return {
      commit: git("rev-parse", "--short", "HEAD"),
      store_changes: changes === "" ? [] : changes.split("\n"),
    };
  } catch {
    return { commit: "unknown", store_changes: [] };
  }
}

async function main(): Promise<void> {
  const env = Env.parse(
    Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BENCH_"))),
  );
  const out = resolve(env.BENCH_OUT);
  const work = join(out, `work-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    await runAll(env, out, work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function runAll(env: z.infer<typeof Env>, out: string, work: string): Promise<void> {
  const started = new Date();
  const machine = describeMachine(out);
  const only = new Set(env.BENCH_ONLY);
  log(`tenax store bench: ${machine.nproc} CPUs, node ${machine.node}, SQLite ${machine.sqlite}`);

  let write: WriteResult | null = null;
  let writeDiagnosis: WriteDiagnosis | null = null;
  if (only.has("write")) {
    log(`write throughput: base store of ${int(env.BENCH_BASE_MESSAGES)} messages`);
    const base = await ensureFixture(out, env.BENCH_BASE_MESSAGES, log);
    write = await runWriteBench(base, {
      rounds: env.BENCH_ROUNDS,
      trialSeconds: env.BENCH_TRIAL_SECONDS,
      trialMessages: env.BENCH_TRIAL_MESSAGES,
      workDir: work,
      log,
    });
    if (judgeAims(write.rows, null, 0).some((a) => !a.met)) {
      log("a write aim was missed: diagnosing");
      writeDiagnosis = await diagnoseWrites(base, work, 3, env.BENCH_TRIAL_SECONDS, log);
    }
  }

  let sizes: SizeRow[] | null = null;
  if (only.has("sizes")) {
    log("batched appends by message size");
    sizes = await runAppendSizes(work, env.BENCH_TRIAL_MESSAGES, env.BENCH_ROUNDS);
  }

  let search: SearchResultSet | null = null;
  let diagnosis: SearchDiagnosis | null = null;
  let open: OpenResult | null = null;
  let reader: ReaderResult | null = null;
  let cold: ColdResult | null = null;
  let fixtureInfo: Record<string, unknown> | null = null;
  if (only.has("search") || only.has("open") || only.has("reader")) {
    log(`big store: ${int(env.BENCH_MESSAGES)} messages`);
    const big = await ensureFixture(out, env.BENCH_MESSAGES, log);
    fixtureInfo = {
      messages: big.meta.messages,
      sessions: big.meta.sessions,
      cached: big.cached,
      build: big.meta.build,
    };
    log(big.cached ? "  using the cached store" : `  built in ${big.meta.build.total_s.toFixed(0)} s`);
    if (only.has("open")) {
      log("open and integrity check");
      open = await runOpenBench(big.paths, env.BENCH_OPEN_REPEATS, env.BENCH_CHECK_REPEATS, log);
    }
    if (only.has("search")) {
      log("search latency");
      const store = await openStore(big.paths, { integrityCheckTimeoutMs: 0 });
      try {
        const queries = queryMix(big.meta.samples, env.BENCH_QUERIES);
        search = runSearchBench(store, queries, env.BENCH_SEARCH_ROUNDS, log);
        if (search.overall.p95_ms >= 20) {
          log("search p95 missed the aim: diagnosing");
          diagnosis = diagnoseSearch(store, big.paths, search, log);
        }
      } finally {
        await releaseStore(store);
      }
    }
    if (only.has("reader")) {
      log("reader");
      reader = runReaderBench(big.paths, big.meta.session_200, env.BENCH_READER_REPEATS);
    }
    if (only.has("open")) {
      log("open and integrity check with a cold file cache");
      cold = await runColdOpenBench(big.paths, log);
    }
  }

  const aims = judgeAims(write?.rows ?? null, search, env.BENCH_MESSAGES);
  const result = {
    started_at: started.toISOString(),
    duration_s: (Date.now() - started.getTime()) / 1000,
    command: process.argv.slice(1).join(" "),
    source: sourceVersion(),
    settings: env,
    machine: { ...machine, load_after: loadavg() },
    fixture: fixtureInfo,
    write,
    write_diagnosis: writeDiagnosis,
    sizes,
    search,
    search_diagnosis: diagnosis,
    open,
    open_cold: cold,
    reader,
    aims,
  };
  const name = `bench-${started.toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(join(out, name), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(out, "latest.json"), `${JSON.stringify(result, null, 2)}\n`);
  print(result);
  log(`\nwritten: ${join(out, name)} (and latest.json)`);
}

function print(r: {
  machine: ReturnType<typeof describeMachine> & { load_after: number[] };
  write: WriteResult | null;
  write_diagnosis: WriteDiagnosis | null;
  sizes: SizeRow[] | null;
  search: SearchResultSet | null;
  search_diagnosis: SearchDiagnosis | null;
  open: OpenResult | null;
  open_cold: ColdResult | null;
  reader: ReaderResult | null;
  source: ReturnType<typeof sourceVersion>;
  aims: ReturnType<typeof judgeAims>;
  fixture: Record<string, unknown> | null;
}): void {
  const m = r.machine;
  const lines: string[] = [];
  lines.push(
    `\nmachine: ${m.nproc} x ${m.cpu}, ${m.memory_gib} GiB, node ${m.node}, SQLite ${m.sqlite} (better-sqlite3 ${m.better_sqlite3})`,
    `source: commit ${r.source.commit}${r.source.store_changes.length > 0 ? ` + ${r.source.store_changes.length} changed files in src/store` : ""}`,
    `disk: ${m.disk}; 4 KiB write+fsync median ${ms(m.fsync_4k_ms)} ms; load ${m.load_before.map((x) => x.toFixed(2)).join(" ")} -> ${m.load_after.map((x) => x.toFixed(2)).join(" ")}`,
  );
  if (r.sizes) {
    lines.push(
      "\nbatched appends by message size (batches of 1,000, synchronous=normal, re-read on)",
      table(
        ["chars", "messages/s", "content MiB/s"],
        r.sizes.map((z) => [String(z.chars), int(z.messages_per_s), z.content_mib_per_s.toFixed(1)]),
      ),
    );
  }
  if (r.write) {
    lines.push(
      `\nappends (median of ${r.write.options.rounds} rounds, base store ${int(r.write.base_messages)} messages)`,
      table(
        ["mode", "synchronous", "reread", "appended/s", "index flush/s", "append+flush/s"],
        r.write.rows.map((w) => [
          w.mode,
          w.synchronous,
          String(w.reread),
          int(w.append_per_s),
          int(w.flush_per_s),
          int(w.end_to_end_per_s),
        ]),
      ),
      "\npage re-read cost (appends/s with reread=false divided by reread=true, median of paired rounds)",
      table(
        ["mode", "synchronous", "speed-up without re-read"],
        r.write.reread_cost.map((c) => [c.mode, c.synchronous, `x${c.speedup_without_reread.toFixed(2)}`]),
      ),
    );
  }
  if (r.write_diagnosis) lines.push(...r.write_diagnosis.lines);
  if (r.search) {
    const s = r.search;
    lines.push(
      `\nsearch latency, Store.search(q, {limit: 20}) (${s.queries_per_kind} queries per kind x ${s.rounds} rounds)`,
      table(
        ["kind", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        [...QUERY_KINDS.map((k) => [k, s.by_kind[k]] as const), ["overall", s.overall] as const].map(
          ([k, l]) => [k, String(l.n), ms(l.p50_ms), ms(l.p95_ms), ms(l.p99_ms), ms(l.max_ms)],
        ),
      ),
    );
  }
  if (r.search_diagnosis) lines.push(...r.search_diagnosis.lines);
  if (r.open) {
    const o = r.open;
    const c = r.open_cold;
    const openRow = (label: string, f: OpenResult["open_default"]) => [
      label,
      ms(f.median_ms),
      "",
      String(f.ms.length),
      `${f.status.join(",")}; state.db check ${ms(median(f.state_check_ms))} ms`,
    ];
    const checkRow = (label: string, f: OpenResult["quick_check"]) => [
      label,
      ms(f.median_wall_ms),
      ms(f.median_state_ms),
      String(f.wall_ms.length),
      f.status,
    ];
    const s = o.search_db_quick_check;
    lines.push(
      "\nopen and integrity check (big store; warm file cache unless marked cold)",
      table(
        ["step", "call ms", "state.db ms", "runs", "result"],
        [
          openRow("Store.open, default integrity budget", o.open_default),
          [
            "Store.open, integrity check off",
            ms(o.open_no_check.median_ms),
            "",
            String(o.open_no_check.ms.length),
            "",
          ],
          checkRow("checkIntegrity('quick')", o.quick_check),
          checkRow("checkIntegrity('full')", o.integrity_check),
          ...(c
            ? [
                checkRow("checkIntegrity('quick'), cold", c.quick_check),
                openRow("Store.open, default budget, cold", c.open_default),
              ]
            : []),
        ],
      ),
      "  (checkIntegrity also checks search.db, in parallel, and resolves when both are done)",
      `search.db PRAGMA quick_check: ${ms(s.whole_ms)} ms; its plain tables alone ${ms(s.plain_tables_ms)} ms; ` +
        `the FTS5 table's own check (quick_check(fts)) ${ms(s.fts_virtual_table_ms)} ms`,
      `files: ${Object.entries(o.bytes)
        .map(([k, v]) => `${k} ${mib(v)}`)
        .join(", ")}`,
    );
  }
  if (r.reader) {
    const d = r.reader;
    lines.push(
      `\nreader on the big store (${d.repeats} repeats, a new reader each time)`,
      table(
        ["step", "first ms", "median ms", "p95 ms"],
        [
          ["openReader", d.open],
          [`listSessions (${d.list_sessions.sessions} rows)`, d.list_sessions],
          [`getMessages (${d.get_messages.messages} messages)`, d.get_messages],
        ].map(([label, s]) => {
          const step = s as { first_ms: number; median_ms: number; p95_ms: number };
          return [label as string, ms(step.first_ms), ms(step.median_ms), ms(step.p95_ms)];
        }),
      ),
    );
  }
  lines.push(
    "\naims",
    table(
      ["aim", "status", "detail"],
      r.aims.map((a) => [a.aim, a.met ? "met" : "NOT MET", a.detail]),
    ),
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
