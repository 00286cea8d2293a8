// One agent turn, profiled (issue 28's "before and after"): a Tenax gateway on SQLite
// (synchronous: full) in front of the simulator, sent N non-streamed chat completions one at a
// time after a warm-up, in three runs of its own so that no instrument weighs on another's figure:
//   1. latency: the gateway as it ships, each turn paired with a call to the simulator directly;
//      "added" is the gateway's p50 (p99) minus the simulator's, as the gateway suite reports it;
//   2. CPU: the gateway under `node --cpu-prof`, its self time between two marks summed by part
//      (cpu-parts.ts), and the process's CPU time between them;
//   3. store work: the gateway under `strace -f` (strace-io.ts: preads, pwrites, syncs, locks and
//      bytes by file) with every SQLite statement counted (turn-profile-preload.ts).
// The marks are turn-profile-preload.ts's, written on SIGUSR2 right before and after the N turns.
// Simulator, gateway and this process (the client) are separate processes; nothing under src/ is
// changed to measure it.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Pool } from "undici";
import { seededRandom } from "../src/core/deps.js";
import { type CpuBreakdown, findCpuProfile, summarizeCpuProfile } from "./cpu-parts.js";
import { type Child, launch, printedUrl, stopAll } from "./load-run.js";
import { table } from "./report.js";
import { type CallFigures, callFigures, pairedDiff } from "./stats.js";
import { countStraceWindow, type IoCounts, type StraceWindow, sumCalls, TRACED_CALLS } from "./strace-io.js";
import { answers, launchTenax, TENAX_HEADERS, type TenaxOptions, tenaxHome } from "./tenax-gateway.js";
import type { FileCounts, Mark } from "./turn-profile-preload.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PRELOAD = pathToFileURL(join(HERE, "turn-profile-preload.js")).href;
const STRACE = "/usr/bin/strace";
/** The gateway suite's prompt, so the turns are the same. */
const PROMPT = "say something short about resilient agents";

export interface TurnProfileSettings {
  turns: number;
  warmup: number;
  /** --cpu-prof-interval: µs between samples (V8's default is 1000). */
  cpuIntervalUs: number;
}

export interface LatencyFigures {
  direct: CallFigures;
  tenax: CallFigures;
  added_p50_ms: number;
  added_p99_ms: number;
  /** The median of (turn i - direct call i): the pairs ran back to back. */
  paired_added_p50_ms: number;
  errors: number;
}

/** Per turn: a mark's counts, differenced and divided by the turns. */
export interface StatementFigures {
  by_file: Record<string, Omit<FileCounts, "by_sql">>;
  /** Every statement run in the window, most frequent first. */
  by_sql: { file: string; sql: string; per_turn: number }[];
  /** Over every file: statements, and commits that wrote (transactions and autocommits). */
  statements_per_turn: number;
  commits_per_turn: number;
}

export interface IoFigures {
  window: StraceWindow;
  /** Between the marks (the turns run slower under strace, so background work weighs more per turn). */
  window_ms: number;
  /** The window's totals divided by the turns, by call then file. */
  per_turn: IoCounts;
}

export interface CpuFigures {
  breakdown: CpuBreakdown;
  /** The process's user + system CPU between the marks, every thread (the profile: main thread only). */
  process_cpu_ms_per_turn: number;
  /** Every thread's, the profiler's sampling thread (a wake-up per sample) included. */
  voluntary_switches_per_turn: number;
  profile: string;
}

export interface TurnProfileResult {
  settings: TurnProfileSettings;
  latency: LatencyFigures;
  cpu: CpuFigures;
  statements: StatementFigures;
  /** Null when strace is not installed. */
  io: IoFigures | null;
  notes: string[];
}

interface Target {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  body: string;
}

function target(url: string, path: string, headers: Record<string, string>, model: string): Target {
  return {
    pool: new Pool(new URL(url).origin, { connections: 4, pipelining: 1, keepAliveTimeout: 60_000 }),
    path,
    headers,
    body: JSON.stringify({ model, messages: [{ role: "user", content: PROMPT }] }),
  };
}

/** One non-streamed request, its body read to the end: ms, or null for an answer that was not a 200. */
async function once(t: Target): Promise<number | null> {
  const started = performance.now();
  try {
    const res = await t.pool.request({ path: t.path, method: "POST", headers: t.headers, body: t.body });
    await res.body.text();
    return res.statusCode === 200 ? performance.now() - started : null;
  } catch {
    return null;
  }
}

async function turns(t: Target, n: number): Promise<number> {
  let errors = 0;
  for (let i = 0; i < n; i++) if ((await once(t)) === null) errors++;
  return errors;
}

/** A gateway started with the preload (marks, and counts when `count`), and its node process id. */
interface Profiled {
  child: Child;
  pid: number;
  dir: string;
  url: string;
}

async function startProfiled(
  workDir: string,
  simUrl: string,
  name: string,
  count: boolean,
  options: Pick<TenaxOptions, "nodeArgs" | "wrapper">,
): Promise<Profiled> {
  const dir = join(workDir, `turn-profile-${name}`);
  mkdirSync(dir, { recursive: true });
  const real = realpathSync(dir);
  const home = tenaxHome(workDir, simUrl, 64, { synchronous: "full" });
  const gw = await launchTenax(home, {
    synchronous: "full",
    nodeArgs: ["--import", PRELOAD, ...(options.nodeArgs ?? [])],
    ...(options.wrapper ? { wrapper: options.wrapper } : {}),
    env: { TENAX_TURN_PROFILE_DIR: real, TENAX_TURN_PROFILE_COUNT: count ? "1" : "0" },
  });
  const pid = Number(readFileSync(join(real, "pid"), "utf8"));
  return { child: gw.process, pid, dir: real, url: gw.url };
}

/** SIGUSR2 to the gateway, and its mark once written. */
async function mark(p: Profiled, n: number): Promise<Mark> {
  process.kill(p.pid, "SIGUSR2");
  const path = join(p.dir, `mark-${n}.json`);
  const deadline = performance.now() + 10_000;
  while (!existsSync(path)) {
    if (performance.now() > deadline) throw new Error(`the gateway wrote no ${path}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return JSON.parse(readFileSync(path, "utf8")) as Mark;
}

/** SIGTERM to the gateway's node process (a wrapper such as strace ignores it), then its child's end. */
async function stopProfiled(p: Profiled): Promise<void> {
  try {
    process.kill(p.pid, "SIGTERM");
  } catch {
    // already gone
  }
  await Promise.race([p.child.exited, new Promise((r) => setTimeout(r, 15_000))]);
  if (p.child.child.exitCode === null && p.child.child.signalCode === null) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
    p.child.child.kill("SIGKILL");
  }
}

/** Warm up, mark, N turns, mark: the window every per-turn figure is taken over. */
async function measuredTurns(
  p: Profiled,
  settings: TurnProfileSettings,
): Promise<{ first: Mark; last: Mark; errors: number }> {
  const t = target(p.url, "/v1/chat/completions", TENAX_HEADERS, "tenax");
  try {
    await answers(`${p.url}/v1/chat/completions`, TENAX_HEADERS, "tenax");
    await turns(t, settings.warmup);
    const first = await mark(p, 1);
    const errors = await turns(t, settings.turns);
    const last = await mark(p, 2);
    return { first, last, errors };
  } finally {
    await t.pool.close();
  }
}

async function latencyRun(
  workDir: string,
  simUrl: string,
  settings: TurnProfileSettings,
  log: (line: string) => void,
): Promise<LatencyFigures> {
  const gw = await launchTenax(tenaxHome(workDir, simUrl, 64, { synchronous: "full" }), {
    synchronous: "full",
  });
  const sim = new URL(simUrl);
  const direct = target(
    simUrl,
    `${sim.pathname}/chat/completions`,
    { "content-type": "application/json", authorization: "Bearer sk-bench" },
    "echo",
  );
  const tenax = target(gw.url, "/v1/chat/completions", TENAX_HEADERS, "tenax");
  try {
    await answers(`${gw.url}/v1/chat/completions`, TENAX_HEADERS, "tenax");
    log(`  latency: Tenax gateway ${gw.url} (pid ${gw.process.child.pid}), ${settings.warmup} warm-up pairs`);
    const random = seededRandom(0x28);
    const d: number[] = [];
    const g: number[] = [];
    let errors = 0;
    for (let i = 0; i < settings.warmup + settings.turns; i++) {
      // Each pair in a random order, so neither side always follows the other.
      const order = random() < 0.5 ? ([direct, tenax] as const) : ([tenax, direct] as const);
      const ms = new Map<Target, number | null>();
      for (const t of order) ms.set(t, await once(t));
      const a = ms.get(direct) ?? null;
      const b = ms.get(tenax) ?? null;
      if (a === null || b === null) errors++;
      if (i < settings.warmup || a === null || b === null) continue;
      d.push(a);
      g.push(b);
    }
    const df = callFigures(d);
    const gf = callFigures(g);
    return {
      direct: df,
      tenax: gf,
      added_p50_ms: gf.p50_ms - df.p50_ms,
      added_p99_ms: gf.p99_ms - df.p99_ms,
      paired_added_p50_ms: pairedDiff(g, d),
      errors,
    };
  } finally {
    await Promise.all([direct.pool.close(), tenax.pool.close()]);
    await stopAll([gw.process]);
  }
}

async function cpuRun(
  workDir: string,
  outDir: string,
  simUrl: string,
  settings: TurnProfileSettings,
  log: (line: string) => void,
): Promise<{ cpu: CpuFigures; errors: number }> {
  const profileDir = join(workDir, "turn-profile-cpu-prof");
  mkdirSync(profileDir, { recursive: true });
  const p = await startProfiled(workDir, simUrl, "cpu", false, {
    nodeArgs: [
      "--cpu-prof",
      "--cpu-prof-dir",
      profileDir,
      "--cpu-prof-interval",
      String(settings.cpuIntervalUs),
    ],
  });
  log(`  CPU: Tenax gateway under --cpu-prof (${settings.cpuIntervalUs} µs), pid ${p.pid}`);
  let window: { first: Mark; last: Mark; errors: number };
  try {
    window = await measuredTurns(p, settings);
  } finally {
    await stopProfiled(p);
  }
  const { first, last, errors } = window;
  // Kept beside the results, to be opened in a browser's profiler.
  const profile = join(outDir, `turn-profile-${new Date().toISOString().replace(/[:.]/g, "-")}.cpuprofile`);
  copyFileSync(findCpuProfile(readdirSync(profileDir), profileDir, p.pid), profile);
  const n = settings.turns;
  const cpuMs = (last.cpu_us.user + last.cpu_us.system - first.cpu_us.user - first.cpu_us.system) / 1000;
  return {
    cpu: {
      breakdown: summarizeCpuProfile(profile, first.hrtime_us, last.hrtime_us),
      process_cpu_ms_per_turn: cpuMs / n,
      voluntary_switches_per_turn:
        (last.resource.voluntaryContextSwitches - first.resource.voluntaryContextSwitches) / n,
      profile,
    },
    errors,
  };
}

function statementFigures(first: Mark, last: Mark, n: number): StatementFigures {
  const by_file: StatementFigures["by_file"] = {};
  const by_sql: StatementFigures["by_sql"] = [];
  let statements = 0;
  let commits = 0;
  for (const [file, end] of Object.entries(last.files)) {
    const start = first.files[file];
    const delta = (k: Exclude<keyof FileCounts, "by_sql">) => (end[k] - (start?.[k] ?? 0)) / n;
    const counts = {
      statements: delta("statements"),
      prepares: delta("prepares"),
      write_commits: delta("write_commits"),
      read_commits: delta("read_commits"),
      autocommits: delta("autocommits"),
      rollbacks: delta("rollbacks"),
      transaction_functions: delta("transaction_functions"),
    };
    if (Object.values(counts).every((v) => v === 0)) continue;
    by_file[file] = counts;
    statements += counts.statements;
    commits += counts.write_commits + counts.autocommits;
    for (const [sql, total] of Object.entries(end.by_sql)) {
      const ran = total - (start?.by_sql[sql] ?? 0);
      if (ran > 0) by_sql.push({ file, sql, per_turn: ran / n });
    }
  }
  by_sql.sort((a, b) => b.per_turn - a.per_turn);
  return { by_file, by_sql, statements_per_turn: statements, commits_per_turn: commits };
}

async function storeRun(
  workDir: string,
  simUrl: string,
  settings: TurnProfileSettings,
  log: (line: string) => void,
): Promise<{ statements: StatementFigures; io: IoFigures | null; errors: number }> {
  const traced = existsSync(STRACE);
  const straceLog = join(workDir, "turn-profile-strace.log");
  const wrapper = traced
    ? [
        STRACE,
        "-f",
        "-y",
        "-s",
        "0",
        "-qq",
        "--seccomp-bpf",
        "-e",
        "signal=none",
        "-e",
        `trace=${TRACED_CALLS.join(",")}`,
        "-o",
        straceLog,
      ]
    : undefined;
  const p = await startProfiled(workDir, simUrl, "store", true, wrapper ? { wrapper } : {});
  log(`  store: Tenax gateway ${traced ? "under strace -f, " : ""}statements counted, pid ${p.pid}`);
  let window: { first: Mark; last: Mark; errors: number };
  try {
    window = await measuredTurns(p, settings);
  } finally {
    await stopProfiled(p);
  }
  const n = settings.turns;
  const statements = statementFigures(window.first, window.last, n);
  if (!traced) return { statements, io: null, errors: window.errors };
  const counted = countStraceWindow(straceLog, p.dir, p.pid);
  const per_turn: IoCounts = {};
  for (const [call, files] of Object.entries(counted.counts)) {
    per_turn[call] = Object.fromEntries(
      Object.entries(files).map(([file, c]) => [
        file,
        { calls: c.calls / n, bytes: c.bytes / n, off_main: c.off_main / n },
      ]),
    );
  }
  const windowMs = (window.last.hrtime_us - window.first.hrtime_us) / 1000;
  return { statements, io: { window: counted, window_ms: windowMs, per_turn }, errors: window.errors };
}

export async function runTurnProfileBench(
  workDir: string,
  outDir: string,
  settings: TurnProfileSettings,
  log: (line: string) => void,
): Promise<TurnProfileResult> {
  const sim = launch([join(HERE, "gateway-sim-child.js")]);
  try {
    const simUrl = await printedUrl("the simulator", sim);
    log(`  simulator: ${simUrl} (pid ${sim.child.pid})`);
    const latency = await latencyRun(workDir, simUrl, settings, log);
    const cpu = await cpuRun(workDir, outDir, simUrl, settings, log);
    const store = await storeRun(workDir, simUrl, settings, log);
    const notes: string[] = [];
    if (store.io === null) notes.push(`${STRACE} not found: no system call counts`);
    else if (!store.io.window.found) notes.push("the strace log holds no two marks: no system call counts");
    if (!cpu.cpu.breakdown.windowed)
      notes.push("the marks fell outside the CPU profile's time: the whole profile was summed");
    if (cpu.errors + store.errors > 0)
      notes.push(`${cpu.errors} failed turns in the CPU run, ${store.errors} in the store run`);
    return { settings, latency, cpu: cpu.cpu, statements: store.statements, io: store.io, notes };
  } finally {
    await stopAll([sim]);
  }
}

const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "-");
const f3 = (n: number) => (Number.isFinite(n) ? n.toFixed(3) : "-");
const plus = (n: number) => `${n >= 0 ? "+" : ""}${f2(n)}`;

function ioTable(io: IoFigures): string {
  const files = new Set<string>();
  for (const byFile of Object.values(io.per_turn)) for (const file of Object.keys(byFile)) files.add(file);
  const at = (call: string, file: string) => io.per_turn[call]?.[file] ?? { calls: 0, bytes: 0, off_main: 0 };
  const rows = [...files]
    .filter((file) => file !== "socket" && file !== "pipe")
    .sort()
    .map((file) => [
      file,
      f2(at("pread64", file).calls),
      f2(at("pwrite64", file).calls),
      (at("pwrite64", file).bytes / 1024).toFixed(1),
      f2(at("fdatasync", file).calls),
      f2(at("fsync", file).calls),
      f2(at("fdatasync", file).off_main + at("fsync", file).off_main),
      f2(at("fcntl", file).calls),
      f2(at("write", file).calls + at("writev", file).calls),
    ]);
  return table(
    [
      "file",
      "pread64",
      "pwrite64",
      "KiB written",
      "fdatasync",
      "fsync",
      "syncs off main",
      "fcntl",
      "write(v)",
    ],
    rows,
  );
}

export function turnProfileLines(r: TurnProfileResult): string[] {
  const s = r.settings;
  const l = r.latency;
  const c = r.cpu.breakdown;
  const st = r.statements;
  const n = s.turns;
  const lines = [
    `\none agent turn, profiled (issue 28): ${n} non-streamed turns one at a time after ${s.warmup} warm-up, SQLite synchronous=full`,
    table(
      ["target", "p50 ms", "p99 ms", "mean ms", "added p50", "added p99"],
      [
        ["simulator directly", f2(l.direct.p50_ms), f2(l.direct.p99_ms), f2(l.direct.mean_ms), "", ""],
        [
          "Tenax gateway, model tenax",
          f2(l.tenax.p50_ms),
          f2(l.tenax.p99_ms),
          f2(l.tenax.mean_ms),
          plus(l.added_p50_ms),
          plus(l.added_p99_ms),
        ],
      ],
    ),
    `  paired median added ${plus(l.paired_added_p50_ms)} ms; ${l.errors} failed pairs`,
  ];
  if (r.io !== null) {
    const io = r.io.per_turn;
    const wal = sumCalls(io, "pwrite64", (file) => file.endsWith("-wal"));
    const syncs = sumCalls(io, "fdatasync", () => true).calls + sumCalls(io, "fsync", () => true).calls;
    lines.push(
      `\nfile system calls per turn (strace -f, every thread, ${f2(r.io.window_ms)} ms between the marks): ${f2(syncs)} syncs, ${f2(sumCalls(io, "pread64", () => true).calls)} preads, ` +
        `${f2(sumCalls(io, "pwrite64", () => true).calls)} pwrites, ${(wal.bytes / 1024).toFixed(1)} KiB to the WAL files`,
      ioTable(r.io),
      `  sockets: ${f2(sumCalls(io, "write", (x) => x === "socket").calls + sumCalls(io, "writev", (x) => x === "socket").calls)} write(v) calls; ` +
        `pipes (stdout, stderr): ${f2(sumCalls(io, "write", (x) => x === "pipe").calls + sumCalls(io, "writev", (x) => x === "pipe").calls)}`,
    );
  }
  lines.push(
    `\nSQLite per turn: ${f2(st.statements_per_turn)} statements, ${f2(st.commits_per_turn)} commits that wrote`,
    table(
      [
        "file",
        "statements",
        "prepared",
        "commits",
        "read-only txns",
        "autocommits",
        "rollbacks",
        "txn fns made",
      ],
      Object.entries(st.by_file).map(([file, x]) => [
        file,
        f2(x.statements),
        f2(x.prepares),
        f2(x.write_commits),
        f2(x.read_commits),
        f2(x.autocommits),
        f2(x.rollbacks),
        f2(x.transaction_functions),
      ]),
    ),
    "  statements run per turn, most frequent first:",
    table(
      ["per turn", "file", "method and SQL"],
      st.by_sql.slice(0, 30).map((x) => [f2(x.per_turn), x.file, x.sql.slice(0, 100)]),
    ),
    `\nCPU per turn by part (main thread, self time, ${c.samples} samples at ${s.cpuIntervalUs} µs over ${f2(c.window_ms)} ms): ` +
      `${f3(c.busy_ms / n)} ms busy, ${f3(c.idle_ms / n)} ms idle; the process's user+system CPU ${f3(r.cpu.process_cpu_ms_per_turn)} ms (every thread)`,
    table(
      ["part", "group", "ms per turn", "% of busy"],
      c.parts.map((p) => [p.part, p.group, f3(p.ms / n), ((100 * p.ms) / c.busy_ms).toFixed(1)]),
    ),
    `  by group: ${Object.entries(c.groups)
      .map(([g, ms]) => `${g} ${f3(ms / n)} ms`)
      .join(", ")}`,
    "  functions with the most self time:",
    table(
      ["ms per turn", "function", "where", "part"],
      c.top.map((x) => [f3(x.ms / n), x.function, x.where, x.part]),
    ),
  );
  for (const note of r.notes) lines.push(`  note: ${note}`);
  return lines;
}
