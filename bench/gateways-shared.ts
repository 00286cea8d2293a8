// Several gateways of one profile on one PostgreSQL database against one on SQLite (issue 27), in
// one run on this machine: agent turns (`model: "tenax"` through /v1/chat/completions, against the
// simulator) from a closed loop of clients spread round-robin over one, two and three gateways on
// PostgreSQL, beside one gateway on SQLite and the simulator called directly, in shuffled rounds;
// then the takeover time of a run whose gateway gets `kill -9` (gateways-takeover.ts). Each
// gateway has a home of its own with the same config, as separate hosts would; the cluster is the
// gateway suite's (gateway-engines.ts), durable as SQLite's synchronous=FULL is.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type BenchPostgres, diskNote, startBenchPostgres, stopBenchPostgres } from "./gateway-engines.js";
import type { ClosedRound, LoadPlan, LoadTarget } from "./gateway-load.js";
import { runTakeovers, type TakeoverResult } from "./gateways-takeover.js";
import { type Child, launch, printedUrl, runLoad, stopAll } from "./load-run.js";
import { type Aim, table } from "./report.js";
import { median, quantile } from "./stats.js";
import {
  answers,
  launchTenax,
  startTenax,
  TENAX_HEADERS,
  type TenaxGateway,
  type TenaxOptions,
  tenaxTarget,
} from "./tenax-gateway.js";

const HERE = dirname(fileURLToPath(import.meta.url));

export interface SharedSettings {
  /** The closed loop's sizes, each measured in a run of its own. */
  clients: number[];
  /** Seconds per configuration per round. */
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  /** The most gateways on PostgreSQL (1 up to this many are measured). */
  gateways: number;
  kills: number;
}

/** A configuration's figures at one closed-loop size: medians over rounds, sums of requests. */
export interface ConfigFigures {
  name: string;
  engine: "direct" | "sqlite" | "postgres";
  gateways: number;
  turns_per_s: number;
  p50_ms: number;
  p99_ms: number;
  /** Median over rounds of (this p50 or p99 - the simulator's called directly, same round). */
  added_p50_ms: number | null;
  added_p99_ms: number | null;
  /** Median over rounds of (turns/s / SQLite's turns/s, same round). */
  vs_sqlite: number | null;
  ok: number;
  errors: number;
}

export interface ClientsFigures {
  clients: number;
  configs: ConfigFigures[];
  rounds: ClosedRound[];
}

export interface SharedGatewaysResult {
  settings: SharedSettings;
  postgres: string;
  notes: string[];
  throughput: ClientsFigures[];
  /** Every failed request of the load runs (warm-up included), by target and kind (`HTTP 409`, `network`). */
  error_kinds: Record<string, Record<string, number>>;
  error_samples: Record<string, string[]>;
  /** The turns stored in PostgreSQL once the load ended, by status (all `completed` when nothing broke). */
  stored_turns: Record<string, number>;
  takeover: TakeoverResult & {
    takeover_ms: Summary;
    resumed_seen_ms: Summary;
    finished_seen_ms: Summary;
  };
}

export type SharedGatewaysOutcome = SharedGatewaysResult | { skipped: string };

interface Summary {
  n: number;
  p50: number;
  max: number;
}

const summary = (values: number[]): Summary => ({
  n: values.length,
  p50: quantile(values, 0.5),
  max: quantile(values, 1),
});

interface Started {
  children: Child[];
  pg: BenchPostgres | null;
}

/** The simulator, one gateway on SQLite and `settings.gateways` on the database at `pgUrl`, each answering. */
async function startGateways(
  workDir: string,
  settings: SharedSettings,
  pgUrl: string,
  started: Started,
  log: (line: string) => void,
) {
  const sim = launch([join(HERE, "gateway-sim-child.js")]);
  started.children.push(sim);
  const simUrl = await printedUrl("the simulator", sim);
  const turns = Math.max(1024, Math.max(...settings.clients) * 4);
  const sqlite = await startTenax(workDir, simUrl, turns, { synchronous: "full" });
  started.children.push(sqlite.process);
  const onPg: TenaxOptions = { synchronous: "full", store: `engine: postgres, url: "${pgUrl}"` };
  const shared: TenaxGateway[] = [];
  for (let i = 0; i < settings.gateways; i++) {
    const gw = await startTenax(workDir, simUrl, turns, onPg);
    started.children.push(gw.process);
    shared.push(gw);
  }
  for (const gw of [sqlite, ...shared])
    await answers(`${gw.url}/v1/chat/completions`, TENAX_HEADERS, "tenax");
  log(
    `  simulator ${simUrl}; SQLite gateway ${sqlite.url}; on PostgreSQL ${shared.map((g) => g.url).join(", ")}`,
  );
  return { simUrl, sqlite, shared, onPg };
}

/** The targets: the simulator directly, SQLite's gateway, then 1..n gateways on PostgreSQL. */
function targetsOf(simUrl: string, sqlite: TenaxGateway, shared: TenaxGateway[]): LoadTarget[] {
  const sim = new URL(simUrl);
  const direct: LoadTarget = {
    name: "direct",
    origin: sim.origin,
    path: `${sim.pathname}/chat/completions`,
    headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
  };
  const onPg = shared.map((_, i) => ({
    ...tenaxTarget(`pg${i + 1}`, shared[0]?.url ?? ""),
    peers: shared.slice(1, i + 1).map((g) => new URL(g.url).origin),
  }));
  return [direct, tenaxTarget("sqlite", sqlite.url), ...onPg];
}

/** The median over rounds of `figure(a's round, b's round)`, pairing the rounds both ran in. */
function paired(
  rounds: ClosedRound[],
  a: string,
  b: string,
  figure: (x: ClosedRound, y: ClosedRound) => number,
): number | null {
  const pairs = rounds
    .filter((r) => r.target === a)
    .flatMap((x) => {
      const y = rounds.find((r) => r.target === b && r.round === x.round);
      return y === undefined ? [] : [figure(x, y)];
    });
  return pairs.length === 0 ? null : median(pairs);
}

function figuresOf(rounds: ClosedRound[], target: LoadTarget): ConfigFigures {
  const name = target.name;
  const own = rounds.filter((r) => r.target === name);
  const direct = name === "direct";
  return {
    name,
    engine: direct ? "direct" : name === "sqlite" ? "sqlite" : "postgres",
    gateways: direct ? 0 : 1 + (target.peers?.length ?? 0),
    turns_per_s: median(own.map((r) => r.rps)),
    p50_ms: median(own.map((r) => r.latency.p50_ms)),
    p99_ms: median(own.map((r) => r.latency.p99_ms)),
    added_p50_ms: direct
      ? null
      : paired(rounds, name, "direct", (x, y) => x.latency.p50_ms - y.latency.p50_ms),
    added_p99_ms: direct
      ? null
      : paired(rounds, name, "direct", (x, y) => x.latency.p99_ms - y.latency.p99_ms),
    vs_sqlite: direct ? null : paired(rounds, name, "sqlite", (x, y) => x.rps / y.rps),
    ok: own.reduce((n, r) => n + r.ok, 0),
    errors: own.reduce((n, r) => n + r.errors, 0),
  };
}

/** The turns in the database by status, once the load has ended. */
async function storedTurns(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const rows = await client.query<{ status: string; n: string }>(
      "SELECT status, count(*) AS n FROM turns GROUP BY status ORDER BY status",
    );
    return Object.fromEntries(rows.rows.map((r) => [r.status, Number(r.n)]));
  } finally {
    await client.end();
  }
}

export async function runSharedGatewaysBench(
  workDir: string,
  settings: SharedSettings,
  log: (line: string) => void,
): Promise<SharedGatewaysOutcome> {
  const started: Started = { children: [], pg: null };
  try {
    const cluster = await startBenchPostgres();
    if ("skipped" in cluster) return { skipped: cluster.skipped };
    started.pg = cluster.pg;
    const notes = [diskNote(cluster.pg, workDir)].flatMap((n) => (n === null ? [] : [n]));
    const { simUrl, sqlite, shared, onPg } = await startGateways(
      workDir,
      settings,
      cluster.pg.url,
      started,
      log,
    );
    const targets = targetsOf(simUrl, sqlite, shared);
    const throughput: ClientsFigures[] = [];
    const errorKinds: Record<string, Record<string, number>> = {};
    const errorSamples: Record<string, string[]> = {};
    for (const clients of settings.clients) {
      log(`  closed loop, ${clients} clients: ${targets.map((t) => t.name).join(", ")}`);
      const plan: LoadPlan = {
        targets,
        diagnosticTargets: [],
        phases: ["closed"],
        rps: 100,
        rounds: 0,
        roundSeconds: 0,
        warmupSeconds: settings.warmupSeconds,
        closedClients: clients,
        closedSeconds: settings.seconds,
        closedRounds: settings.rounds,
        streams: 0,
        seed: 0x6a7e + clients,
        prompt: "say something short about resilient agents",
      };
      const raw = await runLoad(plan, log);
      throughput.push({ clients, configs: targets.map((t) => figuresOf(raw.closed, t)), rounds: raw.closed });
      for (const [t, kinds] of Object.entries(raw.error_kinds)) errorKinds[`${clients}/${t}`] = kinds;
      for (const [t, samples] of Object.entries(raw.error_samples)) errorSamples[`${clients}/${t}`] = samples;
    }
    const stored = await storedTurns(cluster.pg.url);
    log(`  turns stored in PostgreSQL: ${JSON.stringify(stored)}`);

    const [a, b, ...others] = shared;
    if (a === undefined || b === undefined)
      throw new Error("the takeover needs BENCH_GATEWAYS_MAX of 2 or more");
    // Two gateways only: a third would take over some of A's runs in B's place.
    const rest = others.map((g) => g.process);
    await stopAll(rest);
    started.children = started.children.filter((c) => !rest.includes(c));
    log(`  takeover: ${settings.kills} kills of ${a.url}, taken over by ${b.url}`);
    const restart = async (killed: TenaxGateway) => {
      const again = await launchTenax(killed.home, onPg);
      started.children.splice(started.children.indexOf(killed.process), 1, again.process);
      return again;
    };
    const takeover = await runTakeovers(
      { a, b },
      restart,
      { kills: settings.kills, simUrl, chunks: 80, chunkDelayMs: 100 },
      log,
    );
    return {
      settings,
      postgres: `private cluster on 127.0.0.1:${cluster.pg.cluster.port}, fsync on, synchronous_commit on, pool_size 10 (the default) per gateway`,
      notes,
      throughput,
      error_kinds: errorKinds,
      error_samples: errorSamples,
      stored_turns: stored,
      takeover: {
        ...takeover,
        takeover_ms: summary(takeover.kills.map((k) => k.takeover_ms)),
        resumed_seen_ms: summary(takeover.kills.map((k) => k.resumed_seen_ms)),
        finished_seen_ms: summary(takeover.kills.map((k) => k.finished_seen_ms)),
      },
    };
  } finally {
    await stopAll(started.children);
    if (started.pg !== null) await stopBenchPostgres(started.pg);
  }
}

const f = (n: number | null) => (n !== null && Number.isFinite(n) ? n.toFixed(2) : "-");
const plus = (n: number | null) =>
  n !== null && Number.isFinite(n) ? `${n >= 0 ? "+" : ""}${n.toFixed(2)}` : "-";

const LABELS: Record<ConfigFigures["engine"], (c: ConfigFigures) => string> = {
  direct: () => "simulator directly (baseline)",
  sqlite: () => "1 gateway, SQLite (synchronous=FULL)",
  postgres: (c) => `${c.gateways} gateway${c.gateways === 1 ? "" : "s"}, one PostgreSQL`,
};

function throughputTable(t: ClientsFigures): string {
  return table(
    ["configuration", "turns/s", "/ SQLite", "p50 ms", "p99 ms", "added p50", "added p99", "failed"],
    t.configs.map((c) => [
      LABELS[c.engine](c),
      c.turns_per_s.toFixed(0),
      c.vs_sqlite === null ? "" : `x${c.vs_sqlite.toFixed(2)}`,
      f(c.p50_ms),
      f(c.p99_ms),
      plus(c.added_p50_ms),
      plus(c.added_p99_ms),
      `${c.errors}/${c.ok + c.errors}`,
    ]),
  );
}

export function sharedLines(outcome: SharedGatewaysOutcome): string[] {
  if ("skipped" in outcome) return [`\nseveral gateways on one PostgreSQL: not measured: ${outcome.skipped}`];
  const r = outcome;
  const s = r.settings;
  const k = r.takeover;
  const lines = [
    `\nseveral gateways on one PostgreSQL against one on SQLite: agent turns, a closed loop spread round-robin over the gateways, ${s.seconds} s per configuration x ${s.rounds} shuffled rounds (median of rounds; added and / SQLite paired round by round)`,
  ];
  for (const t of r.throughput) lines.push(`\n${t.clients} clients`, throughputTable(t));
  const kinds = Object.entries(r.error_kinds);
  lines.push(
    `  failed requests, warm-up included: ${kinds.length === 0 ? "none" : kinds.map(([t, e]) => `${t} ${JSON.stringify(e)}`).join("; ")}`,
    `  turns stored in PostgreSQL after the load: ${JSON.stringify(r.stored_turns)}`,
    `  ${r.postgres}`,
    ...r.notes.map((n) => `  note: ${n}`),
    `\ntakeover after kill -9 (two gateways on PostgreSQL, ${k.kills.length} of ${k.settings.kills} kills measured), ms from the SIGKILL`,
    table(
      ["moment", "p50 ms", "max ms", "n"],
      [
        ["turn back to running under the other gateway (its /health last_takeover)", k.takeover_ms],
        ["run.resumed read on the other gateway's GET /v1/runs/ID/events", k.resumed_seen_ms],
        ["run.finished read there", k.finished_seen_ms],
      ].map(([label, x]) => {
        const m = x as Summary;
        return [label as string, m.p50.toFixed(0), m.max.toFixed(0), String(m.n)];
      }),
    ),
    `  each: ${k.kills.map((x) => x.takeover_ms).join(", ")} ms`,
    ...k.failures.map((x) => `  failed: ${x}`),
  );
  for (const [target, samples] of Object.entries(r.error_samples))
    lines.push(`  ${target} errors, first ones: ${samples.join(" | ")}`);
  return lines;
}

export function judgeSharedAims(outcome: SharedGatewaysOutcome): Aim[] {
  if ("skipped" in outcome) return [];
  const failed = Object.values(outcome.error_kinds).reduce(
    (n, kinds) => n + Object.values(kinds).reduce((a, b) => a + b, 0),
    0,
  );
  const running = outcome.stored_turns.running ?? 0;
  const k = outcome.takeover;
  return [
    {
      aim: "every turn answered with several gateways on one PostgreSQL, none left running",
      met: failed === 0 && running === 0,
      detail: `${failed} failed requests; turns stored ${JSON.stringify(outcome.stored_turns)}`,
    },
    {
      aim: "a killed gateway's run taken over and finished by the other, every time",
      met: k.failures.length === 0 && k.kills.length === k.settings.kills,
      detail: `${k.kills.length}/${k.settings.kills} kills; taken over p50 ${k.takeover_ms.p50.toFixed(0)} ms, max ${k.takeover_ms.max.toFixed(0)} ms; finished p50 ${k.finished_seen_ms.p50.toFixed(0)} ms, max ${k.finished_seen_ms.max.toFixed(0)} ms`,
    },
  ];
}
