// The gateway on a slow disk: every sync of the profile's files made slower by the fault library
// of the store tests (test/fixtures/faultfs, FAULTFS_SYNC_DELAY_US, built here with the machine's
// C compiler), as on an SD card or a throttled cloud volume. Two gateways, the same but for where
// a commit's sync runs: off the event loop (WalSync, the default) or on it (TENAX_STORE_SYNC=inline,
// as SQLite's synchronous=FULL does). Measured at once, in the same rounds: turns a second from
// concurrent clients, their latency, and GET /health's latency meanwhile (what a watchdog sees).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { startSimulator } from "../src/llm/simulator/server.js";
import { buildFaultfs } from "../test/fixtures/faultfs/build.js";
import { type Aim, table } from "./report.js";
import { type Latency, latency, median } from "./stats.js";

const BIN = fileURLToPath(new URL("../../bin/tenax.js", import.meta.url));
const FAULTFS = fileURLToPath(new URL("../../test/fixtures/faultfs/faultfs.c", import.meta.url));
const MODES = ["off_loop", "inline"] as const;
/** The gateway's key (given as TENAX_API_KEY), sent as its clients send it. */
const KEY = "tnx-bench-slow-disk-key";
type Mode = (typeof MODES)[number];

export interface SlowDiskSettings {
  syncDelayMs: number;
  clients: number;
  seconds: number;
  rounds: number;
  /** One GET /health every this many ms while the turns run. */
  healthEveryMs: number;
}

export interface SlowDiskRow {
  turns_per_s: number;
  turn: Latency;
  health: Latency;
  errors: number;
}

export interface SlowDiskResult {
  settings: SlowDiskSettings;
  /** Per mode: the median over rounds of each figure. */
  modes: Record<Mode, SlowDiskRow>;
  rounds: Record<Mode, SlowDiskRow[]>;
}

async function startGateway(
  workDir: string,
  simUrl: string,
  mode: Mode,
  library: string,
  delayUs: number,
): Promise<{ child: ChildProcess; url: string }> {
  const home = mkdtempSync(join(workDir, `slow-disk-${mode}-`));
  writeFileSync(
    join(home, "config.yaml"),
    [
      "model: { provider: sim, name: echo }",
      "providers:",
      `  sim: { type: simulator, base_url: "${simUrl}", max_concurrency: 1024 }`,
      "gateway: { drain_timeout: 1, max_turns: 1024 }",
      "store: { synchronous: full }",
      "",
    ].join("\n"),
  );
  const child = spawn(process.execPath, [BIN, "gateway", "run", "--port", "0"], {
    env: {
      ...process.env,
      TENAX_HOME: home,
      TENAX_PROFILE: "",
      TENAX_API_KEY: KEY,
      LD_PRELOAD: library,
      FAULTFS_MATCH: `${home}/`,
      FAULTFS_N: "0",
      FAULTFS_SYNC_DELAY_US: String(delayUs),
      ...(mode === "inline" ? { TENAX_STORE_SYNC: "inline" } : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: string) => {
      out += chunk;
      const match = /gateway listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1] ?? "");
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", onData);
    child.on("close", () => reject(new Error(`the ${mode} gateway exited before listening:\n${out}`)));
  });
  return { child, url };
}

const BODY = JSON.stringify({
  model: "tenax",
  messages: [{ role: "user", content: "a short answer, please" }],
});

async function round(url: string, settings: SlowDiskSettings): Promise<SlowDiskRow> {
  const origin = new URL(url).origin;
  const pool = new Pool(origin, { connections: settings.clients + 2 });
  const turns: number[] = [];
  const health: number[] = [];
  let errors = 0;
  const until = performance.now() + settings.seconds * 1000;
  const client = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        const res = await pool.request({
          method: "POST",
          path: "/v1/chat/completions",
          headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
          body: BODY,
        });
        await res.body.text();
        if (res.statusCode === 200) turns.push(performance.now() - started);
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const prober = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const res = await pool.request({
        method: "GET",
        path: "/health",
        headers: { authorization: `Bearer ${KEY}` },
      });
      await res.body.text();
      health.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, settings.healthEveryMs));
    }
  };
  const began = performance.now();
  await Promise.all([...Array.from({ length: settings.clients }, client), prober()]);
  const elapsed = (performance.now() - began) / 1000;
  await pool.close();
  return { turns_per_s: turns.length / elapsed, turn: latency(turns), health: latency(health), errors };
}

export async function runSlowDiskBench(
  workDir: string,
  settings: SlowDiskSettings,
  log: (line: string) => void,
): Promise<SlowDiskResult | null> {
  const library = buildFaultfs(FAULTFS, workDir);
  if (library === null) {
    log("  skipped: no C compiler (cc, gcc, clang) to build the slow-disk library");
    return null;
  }
  const sim = await startSimulator();
  const children: ChildProcess[] = [];
  try {
    const gateways = {} as Record<Mode, string>;
    for (const mode of MODES) {
      const g = await startGateway(workDir, sim.url, mode, library, Math.round(settings.syncDelayMs * 1000));
      children.push(g.child);
      gateways[mode] = g.url;
      // Warm up: the first turns load the provider client and fill caches.
      await round(g.url, { ...settings, seconds: 1 });
    }
    const rounds: Record<Mode, SlowDiskRow[]> = { off_loop: [], inline: [] };
    for (let r = 0; r < settings.rounds; r++) {
      // Alternate which goes first, so a drift of the machine's load falls on both.
      const order = r % 2 === 0 ? MODES : [...MODES].reverse();
      for (const mode of order) {
        const row = await round(gateways[mode], settings);
        rounds[mode].push(row);
        log(
          `  round ${r + 1}/${settings.rounds} ${mode}: ${row.turns_per_s.toFixed(0)} turns/s, turn p50 ${row.turn.p50_ms.toFixed(1)} ms, /health p99 ${row.health.p99_ms.toFixed(1)} ms, ${row.errors} errors`,
        );
      }
    }
    const summary = (rows: SlowDiskRow[]): SlowDiskRow => {
      const pick = (f: (r: SlowDiskRow) => Latency): Latency => ({
        n: rows.reduce((a, r) => a + f(r).n, 0),
        p50_ms: median(rows.map((r) => f(r).p50_ms)),
        p95_ms: median(rows.map((r) => f(r).p95_ms)),
        p99_ms: median(rows.map((r) => f(r).p99_ms)),
        max_ms: Math.max(...rows.map((r) => f(r).max_ms)),
      });
      return {
        turns_per_s: median(rows.map((r) => r.turns_per_s)),
        turn: pick((r) => r.turn),
        health: pick((r) => r.health),
        errors: rows.reduce((a, r) => a + r.errors, 0),
      };
    };
    return {
      settings,
      modes: { off_loop: summary(rounds.off_loop), inline: summary(rounds.inline) },
      rounds,
    };
  } finally {
    // Wait for the gateways to exit before their homes are removed.
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("close", () => resolve());
            child.kill("SIGTERM");
          }),
      ),
    );
    await sim.close();
  }
}

export function slowDiskLines(r: SlowDiskResult): string[] {
  const name: Record<Mode, string> = {
    off_loop: "sync off the event loop (default)",
    inline: "sync on the event loop (SQLite FULL)",
  };
  return [
    `slow disk: every sync ${r.settings.syncDelayMs} ms longer; ${r.settings.clients} clients, ${r.settings.rounds} rounds of ${r.settings.seconds} s; GET /health every ${r.settings.healthEveryMs} ms meanwhile (medians over rounds)`,
    table(
      [
        "gateway",
        "turns/s",
        "turn p50 ms",
        "turn p99 ms",
        "/health p50 ms",
        "/health p99 ms",
        "/health max ms",
        "errors",
      ],
      MODES.map((m) => {
        const row = r.modes[m];
        return [
          name[m],
          row.turns_per_s.toFixed(0),
          row.turn.p50_ms.toFixed(2),
          row.turn.p99_ms.toFixed(2),
          row.health.p50_ms.toFixed(2),
          row.health.p99_ms.toFixed(2),
          row.health.max_ms.toFixed(1),
          String(row.errors),
        ];
      }),
    ),
  ];
}

/** Aim: on a slow disk, health answers within one sync time and turns are not slower than inline. */
export function judgeSlowDiskAim(r: SlowDiskResult): Aim {
  const off = r.modes.off_loop;
  const inline = r.modes.inline;
  const met =
    off.health.p99_ms < r.settings.syncDelayMs && off.turns_per_s >= inline.turns_per_s && off.errors === 0;
  return {
    aim: `on a disk whose syncs take ${r.settings.syncDelayMs} ms more, /health p99 stays under that and turns/s at least inline's`,
    met,
    detail: `/health p99 ${off.health.p99_ms.toFixed(2)} ms (inline ${inline.health.p99_ms.toFixed(2)} ms); ${off.turns_per_s.toFixed(0)} turns/s (inline ${inline.turns_per_s.toFixed(0)}); ${off.errors} errors`,
  };
}
