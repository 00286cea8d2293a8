// The gateway side by side with a peer: what Tenax's gateway (the built CLI, storing every turn
// durably) and Portkey's open-source gateway (@portkey-ai/gateway, a proxy) add to a turn without
// tools over calling the simulator directly, Tenax in both its modes (`model: "tenax"`, an agent
// turn; `model: "sim/echo"`, one model call through the resilience core, stored as a session): latency at a fixed rate, maximum throughput, and the
// time to the first streamed token. A bare pass-through proxy (gateway-floor-child.ts) runs beside
// them as the floor: what the extra hop alone costs here. Simulator, load generator and each gateway
// run as separate processes, so none of them measures another's event loop; the targets take turns
// in shuffled rounds, so the machine's noise falls on all of them alike. Since issue 26 the same
// gateway also runs with its profile in PostgreSQL (tenax_pg), and, given BENCH_TENAX_BEFORE, a
// checkout from before the store port on SQLite (tenax_before): see gateway-engines.ts.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type BeforeCheckout,
  type BenchPostgres,
  beforeCheckout,
  diskNote,
  startBenchPostgres,
  stopBenchPostgres,
} from "./gateway-engines.js";
import type { LoadPlan, LoadResult, LoadTarget } from "./gateway-load.js";
import { type Child, freePort, launch, printedUrl, runLoad, stopAll } from "./load-run.js";
import { type Aim, table } from "./report.js";
import { median } from "./stats.js";
import { answers, JSON_HEADERS, startTenax, TENAX_HEADERS, tenaxTarget } from "./tenax-gateway.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PROMPT = "say something short about resilient agents";

/** Every target, in the report's order; the engine targets only when they can run. */
export const GATEWAY_TARGETS = [
  "direct",
  "floor",
  "tenax_before",
  "tenax",
  "tenax_pg",
  "tenax_model",
  "portkey",
] as const;
export type GatewayTarget = (typeof GATEWAY_TARGETS)[number];
/** Measured only when they can be: the pre-port checkout (BENCH_TENAX_BEFORE), PostgreSQL (installed). */
type EngineTarget = "tenax_before" | "tenax_pg";
type Gateway = Exclude<GatewayTarget, "direct">;
/** The model the model-gateway mode is asked for: the simulator's, under its provider's name. */
const MODEL_ID = "sim/echo";
export const SERIAL_TARGETS = [
  "direct",
  "floor",
  "tenax_before",
  "tenax",
  "tenax_pg",
  "tenax_model",
  "tenax_normal",
  "tenax_no_reread",
  "portkey",
] as const;
type SerialTarget = (typeof SERIAL_TARGETS)[number];
/** A figure per target: always there for the targets every run has, maybe for the engine targets. */
type PerTarget<K extends string, T> = Record<Exclude<K, EngineTarget>, T> &
  Partial<Record<Extract<K, EngineTarget>, T>>;

type OpenFigures = {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  achieved_rps: number;
  sent: number;
  errors: number;
  send_lag_p99_ms: number;
};
type Added = { p50_ms: number; p99_ms: number };
type ClosedFigures = { rps: number; p50_ms: number; p99_ms: number; errors: number };
type SerialFigures = { p50_ms: number; p99_ms: number; errors: number };
type StreamFigures = { ttft_p50_ms: number; ttft_p99_ms: number; n: number; errors: number };

export interface GatewaySettings {
  rps: number;
  /** Open-loop seconds per target, split over `rounds`. */
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  closedClients: number;
  closedSeconds: number;
  closedRounds: number;
  streams: number;
  /** A checkout from before the store port (BENCH_TENAX_BEFORE), run as tenax_before. */
  beforeCheckout?: string;
}

/** The store port's cost and PostgreSQL's, from the rounds where the targets ran side by side. */
export interface EngineComparison {
  /** Median over open-loop rounds of tenax p50 / tenax_before p50 (the issue's aim: at most 1.05). */
  port_p50_ratio: number | null;
  /** The same from the one-at-a-time rounds. */
  port_serial_p50_ratio: number | null;
  /** Median over open-loop rounds of tenax_pg p50 - tenax p50, in ms. */
  pg_extra_p50_ms: number | null;
  pg_serial_extra_p50_ms: number | null;
}

export interface GatewayPeerResult {
  settings: GatewaySettings;
  peer: { name: string; version: string; preload: string };
  isolation: string;
  /** The targets measured, in the report's order. */
  targets: GatewayTarget[];
  /** Engine targets not measured, and why. */
  skipped: Partial<Record<EngineTarget, string>>;
  /** What the engine targets ran: the pre-port checkout's commit, PostgreSQL's settings. */
  engines: { before_commit: string | null; postgres: string | null; notes: string[] };
  /** Per target: the median over rounds of each round's figure, and the sums. */
  open: PerTarget<GatewayTarget, OpenFigures>;
  /** Per gateway: the median over rounds of (its round figure - the direct round figure of the same round). */
  added: PerTarget<Gateway, Added>;
  closed: PerTarget<GatewayTarget, ClosedFigures>;
  /** One request at a time (median of rounds), Tenax also with synchronous=NORMAL for the breakdown. */
  serial: PerTarget<SerialTarget, SerialFigures>;
  stream: PerTarget<GatewayTarget, StreamFigures>;
  stream_added: PerTarget<Gateway, Added>;
  engine_comparison: EngineComparison;
  error_samples: Record<string, string[]>;
  raw: LoadResult;
}

/** Portkey's gateway as installed: the script its package runs, and its version. */
export function peerInfo(): { entry: string; version: string } {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve("@portkey-ai/gateway/package.json");
  const pkg = require(pkgPath) as { version: string; bin: string | Record<string, string> };
  const bin = typeof pkg.bin === "string" ? pkg.bin : (Object.values(pkg.bin)[0] ?? "");
  return { entry: join(dirname(pkgPath), bin), version: pkg.version };
}

/** The Tenax gateways of the engine targets that can run here, and why the others do not. */
interface EngineGateways {
  targets: LoadTarget[];
  skipped: Partial<Record<EngineTarget, string>>;
  before: BeforeCheckout | null;
  pg: BenchPostgres | null;
  notes: string[];
}

/** A gateway from the pre-port checkout (SQLite) and one on PostgreSQL, each when it can run. */
async function startEngineGateways(
  workDir: string,
  simUrl: string,
  turns: number,
  settings: GatewaySettings,
  started: { children: Child[]; pg: BenchPostgres | null },
  log: (line: string) => void,
): Promise<EngineGateways> {
  const out: EngineGateways = { targets: [], skipped: {}, before: null, pg: null, notes: [] };
  if (settings.beforeCheckout === undefined) {
    out.skipped.tenax_before = "BENCH_TENAX_BEFORE is not set (a built checkout from before the store port)";
  } else {
    out.before = beforeCheckout(settings.beforeCheckout);
    const before = await startTenax(workDir, simUrl, turns, { synchronous: "full", bin: out.before.bin });
    started.children.push(before.process);
    log(`  Tenax gateway before the store port (${out.before.commit}): ${before.url}`);
    out.targets.push(tenaxTarget("tenax_before", before.url));
  }
  const pg = await startBenchPostgres();
  if ("skipped" in pg) {
    out.skipped.tenax_pg = pg.skipped;
    log(`  tenax_pg skipped: ${pg.skipped}`);
    return out;
  }
  out.pg = pg.pg;
  started.pg = pg.pg;
  const note = diskNote(pg.pg, workDir);
  if (note !== null) out.notes.push(note);
  const store = `engine: postgres, url: "${pg.pg.url}"`;
  const onPg = await startTenax(workDir, simUrl, turns, { synchronous: "full", store });
  started.children.push(onPg.process);
  log(`  Tenax gateway on PostgreSQL (${pg.pg.url}, fsync and synchronous_commit on): ${onPg.url}`);
  out.targets.push(tenaxTarget("tenax_pg", onPg.url));
  return out;
}

export async function runGatewayPeerBench(
  workDir: string,
  settings: GatewaySettings,
  log: (line: string) => void,
): Promise<GatewayPeerResult> {
  // What must be stopped, whatever fails: the children (gateways first), then the cluster.
  const started: { children: Child[]; pg: BenchPostgres | null } = { children: [], pg: null };
  const children = started.children;
  try {
    const sim = launch([join(HERE, "gateway-sim-child.js")]);
    children.push(sim);
    const simUrl = await printedUrl("the simulator", sim);
    log(`  simulator: ${simUrl} (pid ${sim.child.pid})`);
    const floor = launch([join(HERE, "gateway-floor-child.js"), simUrl]);
    children.push(floor);
    const floorUrl = await printedUrl("the floor proxy", floor);

    const turns = Math.max(1024, settings.closedClients * 4);
    const tenax = await startTenax(workDir, simUrl, turns, {
      synchronous: "full",
      profileDir: process.env.BENCH_GATEWAY_PROFILE,
    });
    children.push(tenax.process);
    log(`  Tenax gateway: ${tenax.url} (pid ${tenax.process.child.pid})`);
    // The same gateway with synchronous=NORMAL (no fsync per commit), measured one request at a
    // time only: what the durable commits cost, for the breakdown. Never a default.
    const normal = await startTenax(workDir, simUrl, turns, { synchronous: "normal" });
    children.push(normal.process);
    // And durable, but keeping its page cache across writes (TENAX_STORE_REREAD=off): what the
    // store's re-read of every page a write touches (damage is caught by the next write) costs.
    const noReread = await startTenax(workDir, simUrl, turns, {
      synchronous: "full",
      env: { TENAX_STORE_REREAD: "off" },
    });
    children.push(noReread.process);
    const engines = await startEngineGateways(workDir, simUrl, turns, settings, started, log);

    const peer = peerInfo();
    const peerPort = await freePort();
    const preload = join(HERE, "gateway-peer-fetch.js");
    const portkey = launch(["--import", preload, peer.entry, `--port=${peerPort}`, "--headless"]);
    children.push(portkey);
    const portkeyOrigin = `http://127.0.0.1:${peerPort}`;
    const portkeyHeaders = {
      "content-type": "application/json",
      authorization: "Bearer sk-bench",
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": simUrl,
    };
    await answers(`${portkeyOrigin}/v1/chat/completions`, portkeyHeaders);
    log(`  Portkey gateway ${peer.version}: ${portkeyOrigin} (pid ${portkey.child.pid})`);
    for (const url of [tenax.url, normal.url, noReread.url])
      await answers(`${url}/v1/chat/completions`, TENAX_HEADERS, "tenax");
    for (const t of engines.targets) await answers(`${t.origin}${t.path}`, TENAX_HEADERS, "tenax");
    await answers(`${tenax.url}/v1/chat/completions`, TENAX_HEADERS, MODEL_ID);

    const sim0 = new URL(simUrl);
    const byName = new Map<string, LoadTarget>([
      [
        "direct",
        {
          name: "direct",
          origin: sim0.origin,
          path: `${sim0.pathname}/chat/completions`,
          headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
        },
      ],
      ["floor", { name: "floor", origin: floorUrl, path: "/", headers: JSON_HEADERS }],
      ["tenax", tenaxTarget("tenax", tenax.url)],
      // The same gateway process in its other mode: the targets take turns, never at once.
      ["tenax_model", tenaxTarget("tenax_model", tenax.url, MODEL_ID)],
      [
        "portkey",
        { name: "portkey", origin: portkeyOrigin, path: "/v1/chat/completions", headers: portkeyHeaders },
      ],
      ...engines.targets.map((t): [string, LoadTarget] => [t.name, t]),
    ]);
    const targets = GATEWAY_TARGETS.flatMap((t) => byName.get(t) ?? []);
    const plan: LoadPlan = {
      targets,
      diagnosticTargets: [
        tenaxTarget("tenax_normal", normal.url),
        tenaxTarget("tenax_no_reread", noReread.url),
      ],
      rps: settings.rps,
      rounds: settings.rounds,
      roundSeconds: settings.seconds / settings.rounds,
      warmupSeconds: settings.warmupSeconds,
      closedClients: settings.closedClients,
      closedSeconds: settings.closedSeconds,
      closedRounds: settings.closedRounds,
      streams: settings.streams,
      seed: 0x6a7e,
      prompt: PROMPT,
    };
    const measured = GATEWAY_TARGETS.filter((t) => byName.has(t));
    return summarize(settings, await runLoad(plan, log), peer.version, { measured, engines });
  } finally {
    await stopAll(children);
    if (started.pg !== null) await stopBenchPostgres(started.pg);
  }
}

/** The measured targets' figures, keyed by target (the type says which keys every run has). */
function perTarget<K extends string, T>(keys: readonly K[], figures: (k: K) => T): PerTarget<K, T> {
  return Object.fromEntries(keys.map((k) => [k, figures(k)])) as PerTarget<K, T>;
}

/** An open-loop or one-at-a-time round of one target. */
type Round = { target: string; round: number; latency: LoadResult["open"][number]["latency"] };

/** The median over rounds of `figure(a's round, b's round)`, pairing the rounds both ran in. */
function paired(a: Round[], b: Round[], figure: (x: Round, y: Round) => number): number | null {
  const pairs = a.flatMap((x) => {
    const y = b.find((r) => r.round === x.round);
    return y === undefined ? [] : [figure(x, y)];
  });
  return pairs.length === 0 ? null : median(pairs);
}

/** tenax against tenax_before and tenax_pg, round by round, so one round's noise cancels out. */
function compareEngines(raw: LoadResult): EngineComparison {
  const of = (rounds: Round[], t: GatewayTarget) => rounds.filter((r) => r.target === t);
  const ratio = (x: Round, y: Round) => x.latency.p50_ms / y.latency.p50_ms;
  const extra = (x: Round, y: Round) => x.latency.p50_ms - y.latency.p50_ms;
  return {
    port_p50_ratio: paired(of(raw.open, "tenax"), of(raw.open, "tenax_before"), ratio),
    port_serial_p50_ratio: paired(of(raw.serial, "tenax"), of(raw.serial, "tenax_before"), ratio),
    pg_extra_p50_ms: paired(of(raw.open, "tenax_pg"), of(raw.open, "tenax"), extra),
    pg_serial_extra_p50_ms: paired(of(raw.serial, "tenax_pg"), of(raw.serial, "tenax"), extra),
  };
}

interface Measured {
  /** The targets the load generator ran, in the report's order. */
  measured: GatewayTarget[];
  engines: EngineGateways;
}

function summarize(
  settings: GatewaySettings,
  raw: LoadResult,
  peerVersion: string,
  { measured, engines }: Measured,
): GatewayPeerResult {
  const rounds = (t: GatewayTarget) => raw.open.filter((r) => r.target === t);
  const gateways = measured.filter((t): t is Gateway => t !== "direct");
  const serialTargets = SERIAL_TARGETS.filter(
    (t) => t === "tenax_normal" || t === "tenax_no_reread" || measured.includes(t),
  );
  const open = perTarget(measured, (t) => {
    const rs = rounds(t);
    return {
      p50_ms: median(rs.map((r) => r.latency.p50_ms)),
      p99_ms: median(rs.map((r) => r.latency.p99_ms)),
      max_ms: Math.max(...rs.map((r) => r.latency.max_ms)),
      achieved_rps: median(rs.map((r) => r.achieved_rps)),
      sent: rs.reduce((a, r) => a + r.sent, 0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      send_lag_p99_ms: median(rs.map((r) => r.send_lag_p99_ms)),
    };
  });
  const addedOver = (t: Gateway, key: "p50_ms" | "p99_ms") =>
    paired(rounds(t), rounds("direct"), (x, y) => x.latency[key] - y.latency[key]) ?? Number.NaN;
  const closed = perTarget(measured, (t) => {
    const rs = raw.closed.filter((r) => r.target === t);
    return {
      rps: median(rs.map((r) => r.rps)),
      p50_ms: median(rs.map((r) => r.latency.p50_ms)),
      p99_ms: median(rs.map((r) => r.latency.p99_ms)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
    };
  });
  const serial = perTarget(serialTargets, (t) => {
    const rs = raw.serial.filter((r) => r.target === t);
    return {
      p50_ms: median(rs.map((r) => r.latency.p50_ms)),
      p99_ms: median(rs.map((r) => r.latency.p99_ms)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
    };
  });
  const streamOf = (t: GatewayTarget) => raw.stream.find((s) => s.target === t);
  const stream = perTarget(measured, (t) => {
    const s = streamOf(t);
    return {
      ttft_p50_ms: s?.ttft.p50_ms ?? Number.NaN,
      ttft_p99_ms: s?.ttft.p99_ms ?? Number.NaN,
      n: s?.ok ?? 0,
      errors: s?.errors ?? 0,
    };
  });
  const ttft = (t: GatewayTarget) => stream[t]?.ttft_p50_ms ?? Number.NaN;
  const ttft99 = (t: GatewayTarget) => stream[t]?.ttft_p99_ms ?? Number.NaN;
  return {
    settings,
    peer: {
      name: "@portkey-ai/gateway",
      version: peerVersion,
      preload:
        "bench/gateway-peer-fetch.ts (fetch responses get mutable headers; without it its streaming fails on Node)",
    },
    isolation:
      "simulator, floor proxy, each Tenax gateway, Portkey gateway, PostgreSQL and load generator each in its own process (no shared event loop); targets take turns in shuffled rounds",
    targets: measured,
    skipped: engines.skipped,
    engines: {
      before_commit: engines.before?.commit ?? null,
      postgres: engines.pg
        ? `private cluster on 127.0.0.1:${engines.pg.cluster.port}, fsync on, synchronous_commit on, pool_size 10 (the default)`
        : null,
      notes: engines.notes,
    },
    open,
    added: perTarget(gateways, (t) => ({ p50_ms: addedOver(t, "p50_ms"), p99_ms: addedOver(t, "p99_ms") })),
    closed,
    serial,
    stream,
    stream_added: perTarget(gateways, (t) => ({
      p50_ms: ttft(t) - ttft("direct"),
      p99_ms: ttft99(t) - ttft99("direct"),
    })),
    engine_comparison: compareEngines(raw),
    error_samples: raw.error_samples,
    raw,
  };
}

export function judgeGatewayAims(r: GatewayPeerResult): Aim[] {
  const t = r.added.tenax;
  const p = r.added.portkey;
  const floor = r.added.floor;
  const errors = r.open.tenax.errors;
  return [
    {
      aim: `gateway adds p50 < 1 ms, p99 < 5 ms at ${r.settings.rps}/s, turn stored durably`,
      met: t.p50_ms < 1 && t.p99_ms < 5 && errors === 0,
      detail: `added p50 ${t.p50_ms.toFixed(2)} ms, p99 ${t.p99_ms.toFixed(2)} ms (median of ${r.settings.rounds} rounds), ${errors} errors, ${r.open.tenax.achieved_rps.toFixed(0)}/s achieved; a bare pass-through proxy adds +${floor.p50_ms.toFixed(2)} / +${floor.p99_ms.toFixed(2)} ms`,
    },
    {
      aim: "gateway adds less than the peer (Portkey)",
      met: t.p50_ms < p.p50_ms && t.p99_ms < p.p99_ms,
      detail: `Tenax +${t.p50_ms.toFixed(2)} / +${t.p99_ms.toFixed(2)} ms, Portkey +${p.p50_ms.toFixed(2)} / +${p.p99_ms.toFixed(2)} ms (p50 / p99 added)`,
    },
    ...judgeModelModeAims(r),
    ...judgeEngineAims(r),
  ];
}

/**
 * A target kept up with the open-loop rate: above what it can serve, its p50 is the queue's length
 * after a round, which says nothing about the cost of a turn.
 */
function keptUp(r: GatewayPeerResult, t: GatewayTarget): boolean {
  const open = (r.open as Partial<Record<GatewayTarget, OpenFigures>>)[t];
  return open !== undefined && open.achieved_rps >= 0.97 * r.settings.rps;
}

/**
 * Issue 26: the store port costs the gateway at most 5% at p50 (only when tenax_before ran). Judged
 * at the open-loop rate when both gateways kept up with it, otherwise one request at a time.
 */
function judgeEngineAims(r: GatewayPeerResult): Aim[] {
  const c = r.engine_comparison;
  if (c.port_p50_ratio === null || c.port_serial_p50_ratio === null) return [];
  const open = keptUp(r, "tenax") && keptUp(r, "tenax_before");
  const ratio = open ? c.port_p50_ratio : c.port_serial_p50_ratio;
  const where = open
    ? `at ${r.settings.rps}/s`
    : `one at a time (at ${r.settings.rps}/s they fell behind: ${c.port_p50_ratio.toFixed(3)} compares queues)`;
  const turns = `closed loop ${r.closed.tenax.rps.toFixed(0)} against ${r.closed.tenax_before?.rps.toFixed(0)} turns/s`;
  return [
    {
      aim: "the store port costs at most 5% at p50 (tenax / tenax_before ≤ 1.05)",
      met: ratio <= 1.05,
      detail: `p50 ratio ${ratio.toFixed(3)} ${where}, the median of per-round ratios; ${turns}; before = ${r.engines.before_commit ?? "?"}`,
    },
  ];
}

/** Issue 14's aims for the model-gateway mode: one model call, stored durably as a session. */
function judgeModelModeAims(r: GatewayPeerResult): Aim[] {
  const m = r.added.tenax_model;
  const p = r.added.portkey;
  const errors = r.open.tenax_model.errors + r.stream.tenax_model.errors;
  const ttft = r.stream_added.tenax_model;
  return [
    {
      aim: `model-gateway mode adds p50 < 0.9 ms and at most Portkey's, p99 < 5 ms at ${r.settings.rps}/s, call stored durably`,
      met: m.p50_ms < 0.9 && m.p50_ms <= p.p50_ms && m.p99_ms < 5 && errors === 0,
      detail: `added p50 ${m.p50_ms.toFixed(2)} ms (Portkey ${p.p50_ms.toFixed(2)}), p99 ${m.p99_ms.toFixed(2)} ms (median of ${r.settings.rounds} rounds), ${errors} errors, ${r.open.tenax_model.achieved_rps.toFixed(0)}/s achieved`,
    },
    {
      aim: "model-gateway mode adds under 1 ms to the first streamed token",
      met: ttft.p50_ms < 1 && r.stream.tenax_model.errors === 0,
      detail: `added p50 ${ttft.p50_ms.toFixed(2)} ms, p99 ${ttft.p99_ms.toFixed(2)} ms (Portkey +${r.stream_added.portkey.p50_ms.toFixed(2)} ms p50)`,
    },
  ];
}

const LABELS: Record<GatewayTarget, string> = {
  direct: "simulator directly (baseline)",
  floor: "bare pass-through proxy (the floor: the hop alone)",
  tenax_before: "Tenax before the store port, model tenax (SQLite, synchronous=FULL)",
  tenax: "Tenax gateway, model tenax (agent turn stored, synchronous=FULL)",
  tenax_pg: "Tenax gateway on PostgreSQL, model tenax (fsync, synchronous_commit on)",
  tenax_model: `Tenax gateway, model ${MODEL_ID} (one model call stored, synchronous=FULL)`,
  portkey: "Portkey gateway (proxy, nothing stored)",
};

const DIAGNOSES = {
  tenax_normal: "Tenax gateway, synchronous=NORMAL (diagnosis only)",
  tenax_no_reread: "Tenax gateway, pages kept across writes (diagnosis only)",
};

const f = (n: number | undefined | null) => (n != null && Number.isFinite(n) ? n.toFixed(2) : "-");
const plus = (n: number | undefined | null) =>
  n != null && Number.isFinite(n) ? `${n >= 0 ? "+" : ""}${n.toFixed(2)}` : "-";

/** A figure of a target the report lists; the engine targets are listed only when measured. */
function at<K extends string, T>(figures: PerTarget<K, T>, t: K): T {
  const value = (figures as Partial<Record<K, T>>)[t];
  if (value === undefined) throw new Error(`no figures for ${t}`);
  return value;
}

function openTable(r: GatewayPeerResult): string {
  return table(
    ["target", "p50 ms", "p99 ms", "max ms", "added p50", "added p99", "errors", "achieved /s"],
    r.targets.map((t) => {
      const o = at(r.open, t);
      const added = t === "direct" ? null : at(r.added, t);
      return [
        LABELS[t],
        f(o.p50_ms),
        f(o.p99_ms),
        f(o.max_ms),
        added ? plus(added.p50_ms) : "",
        added ? plus(added.p99_ms) : "",
        `${o.errors}/${o.sent}`,
        o.achieved_rps.toFixed(0),
      ];
    }),
  );
}

function closedTable(r: GatewayPeerResult): string {
  return table(
    ["target", "requests/s", "p50 ms", "p99 ms", "errors"],
    r.targets.map((t) => {
      const c = at(r.closed, t);
      return [LABELS[t], c.rps.toFixed(0), f(c.p50_ms), f(c.p99_ms), String(c.errors)];
    }),
  );
}

function serialTable(r: GatewayPeerResult): string {
  const direct = r.serial.direct;
  const listed = SERIAL_TARGETS.filter((t) => (r.serial as Partial<Record<SerialTarget, unknown>>)[t]);
  return table(
    ["target", "p50 ms", "p99 ms", "added p50", "added p99", "errors"],
    listed.map((t) => {
      const s = at(r.serial, t);
      return [
        DIAGNOSES[t as keyof typeof DIAGNOSES] ?? LABELS[t as GatewayTarget],
        f(s.p50_ms),
        f(s.p99_ms),
        t === "direct" ? "" : plus(s.p50_ms - direct.p50_ms),
        t === "direct" ? "" : plus(s.p99_ms - direct.p99_ms),
        String(s.errors),
      ];
    }),
  );
}

function streamTable(r: GatewayPeerResult): string {
  return table(
    ["target", "TTFT p50 ms", "TTFT p99 ms", "added p50", "added p99", "errors"],
    r.targets.map((t) => {
      const s = at(r.stream, t);
      const added = t === "direct" ? null : at(r.stream_added, t);
      return [
        LABELS[t],
        f(s.ttft_p50_ms),
        f(s.ttft_p99_ms),
        added ? plus(added.p50_ms) : "",
        added ? plus(added.p99_ms) : "",
        String(s.errors),
      ];
    }),
  );
}

/** Issue 26's comparison in a few lines: the port's cost, PostgreSQL's, and what did not run. */
function engineLines(r: GatewayPeerResult): string[] {
  const c = r.engine_comparison;
  const ratio = (n: number | null) => (n === null ? "-" : n.toFixed(3));
  const lines = ["\nstore engines (issue 26), paired round by round:"];
  if (c.port_p50_ratio !== null)
    lines.push(
      `  the store port: tenax / tenax_before (${r.engines.before_commit}) p50 ratio ${ratio(c.port_p50_ratio)} at ${r.settings.rps}/s, ${ratio(c.port_serial_p50_ratio)} one at a time (aim ≤ 1.05)`,
    );
  if (c.pg_extra_p50_ms !== null)
    lines.push(
      `  PostgreSQL: tenax_pg - tenax p50 ${plus(c.pg_extra_p50_ms)} ms at ${r.settings.rps}/s, ${plus(c.pg_serial_extra_p50_ms)} ms one at a time; ${r.engines.postgres}`,
    );
  for (const [target, why] of Object.entries(r.skipped)) lines.push(`  ${target} not measured: ${why}`);
  for (const note of r.engines.notes) lines.push(`  note: ${note}`);
  return lines;
}

export function gatewayLines(r: GatewayPeerResult): string[] {
  const s = r.settings;
  const lines = [
    `\ngateway vs peer, a turn without tools: open loop at ${s.rps}/s, ${s.seconds} s per target in ${s.rounds} shuffled rounds (median of rounds; latency from the scheduled send)`,
    openTable(r),
    `  the load generator's own send lag, p99: ${r.targets.map((t) => `${t} ${f(at(r.open, t).send_lag_p99_ms)} ms`).join(", ")}`,
    `\nclosed loop: ${s.closedClients} clients as fast as answered, ${s.closedSeconds} s per target x ${s.closedRounds} rounds (median)`,
    closedTable(r),
    `\none request at a time (one client), ${s.closedSeconds} s per target x ${s.closedRounds} rounds (median): the cost per turn without queueing`,
    serialTable(r),
    `\nstreaming time to first content token: ${s.streams} requests per target, one at a time, interleaved`,
    streamTable(r),
    ...engineLines(r),
    `  isolation: ${r.isolation}; peer ${r.peer.name} ${r.peer.version} with ${r.peer.preload}`,
  ];
  for (const [target, samples] of Object.entries(r.error_samples)) {
    lines.push(`  ${target} errors, first ones: ${samples.join(" | ")}`);
  }
  return lines;
}
