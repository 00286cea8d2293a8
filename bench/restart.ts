// Restart to healthy: a real `tenax gateway run` process (the built CLI) on a profile whose store
// holds many sessions is stopped with SIGTERM and started again, several times. Measured: the
// stop (signal to exit, nothing running), the start to "listening", and the start to the first
// /health that says ok (every background check has answered). Then /health's own latency over
// many requests while a turn hangs at the provider: health never waits for a hung call.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator } from "../src/llm/simulator/server.js";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { type Aim, table } from "./report.js";
import { median } from "./stats.js";

const BIN = fileURLToPath(new URL("../../bin/tenax.js", import.meta.url));

export interface RestartSettings {
  restarts: number;
  sessions: number;
  messagesPerSession: number;
  healthRequests: number;
}

export interface RestartResult {
  settings: RestartSettings;
  store_messages: number;
  /** One row per restart, in ms. */
  rows: { stop_ms: number; listening_ms: number; healthy_ms: number; restart_to_healthy_ms: number }[];
  median_restart_to_healthy_ms: number;
  max_restart_to_healthy_ms: number;
  health_latency_ms: { p50: number; p99: number; max: number; requests: number };
}

/** The gateway's key (given as TENAX_API_KEY), sent as its clients send it. */
const KEY = "tnx-bench-restart-key";
const AUTH = { authorization: `Bearer ${KEY}` };

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<void>;
}

function start(home: string): { started: number; ready: Promise<Running & { listening_at: number }> } {
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, "gateway", "run", "--port", "0"], {
    env: { ...process.env, TENAX_HOME: home, TENAX_PROFILE: "", TENAX_API_KEY: KEY },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  let out = "";
  const ready = new Promise<Running & { listening_at: number }>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /gateway listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve({ child, url: match[1] ?? "", exited, listening_at: performance.now() });
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
    });
    void exited.then(() => reject(new Error(`the gateway exited before listening:\n${out}`)));
  });
  return { started, ready };
}

async function healthyAt(url: string): Promise<number> {
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline) {
    try {
      const body = (await (await fetch(`${url}/health`, { headers: AUTH })).json()) as { status?: string };
      if (body.status === "ok") return performance.now();
    } catch {
      // Not answering yet.
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`${url}/health never said ok within 30 s`);
}

export async function runRestartBench(
  workDir: string,
  settings: RestartSettings,
  log: (line: string) => void,
): Promise<RestartResult> {
  const sim = await startSimulator();
  const home = mkdtempSync(join(workDir, "restart-"));
  writeFileSync(
    join(home, "config.yaml"),
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\ngateway: { drain_timeout: 1 }\n`,
  );
  const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
  for (let s = 0; s < settings.sessions; s++) {
    const id = await store.createSession({ title: `session ${s}` });
    await store.appendMessages(
      Array.from({ length: settings.messagesPerSession }, (_, i) => ({
        session_id: id,
        role: i % 2 === 0 ? "user" : "assistant",
        content: `message ${i} of session ${s}: ${"lorem ipsum ".repeat(8)}`,
      })),
    );
  }
  await releaseStore(store);
  log(`  store: ${settings.sessions} sessions, ${settings.sessions * settings.messagesPerSession} messages`);
  try {
    let first = start(home);
    let running = await first.ready;
    await healthyAt(running.url);
    const rows: RestartResult["rows"] = [];
    for (let r = 0; r < settings.restarts; r++) {
      const stopAt = performance.now();
      running.child.kill("SIGTERM");
      await running.exited;
      const stopped = performance.now();
      first = start(home);
      running = await first.ready;
      const healthy = await healthyAt(running.url);
      rows.push({
        stop_ms: stopped - stopAt,
        listening_ms: running.listening_at - first.started,
        healthy_ms: healthy - first.started,
        restart_to_healthy_ms: healthy - stopAt,
      });
      log(`  restart ${r + 1}: healthy ${(healthy - stopAt).toFixed(0)} ms after SIGTERM`);
    }

    // /health while a turn hangs at the provider.
    sim.script([{ type: "hang", phase: "before_headers" }]);
    const hung = fetch(`${running.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "hang" }] }),
    }).catch(() => null);
    while (sim.requests().length === 0) await new Promise((r) => setTimeout(r, 5));
    const latencies: number[] = [];
    for (let i = 0; i < settings.healthRequests; i++) {
      const t = performance.now();
      await (await fetch(`${running.url}/health`, { headers: AUTH })).arrayBuffer();
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    running.child.kill("SIGTERM");
    await running.exited;
    await hung;
    const totals = rows.map((r) => r.restart_to_healthy_ms);
    return {
      settings,
      store_messages: settings.sessions * settings.messagesPerSession,
      rows,
      median_restart_to_healthy_ms: median(totals),
      max_restart_to_healthy_ms: Math.max(...totals),
      health_latency_ms: {
        p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
        p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
        max: latencies.at(-1) ?? 0,
        requests: latencies.length,
      },
    };
  } finally {
    await sim.close();
  }
}

export function judgeRestartAims(r: RestartResult): Aim[] {
  return [
    {
      aim: "restart to healthy under 1 s",
      met: r.median_restart_to_healthy_ms < 1000,
      detail: `median ${r.median_restart_to_healthy_ms.toFixed(0)} ms, worst ${r.max_restart_to_healthy_ms.toFixed(0)} ms over ${r.rows.length} restarts`,
    },
    {
      aim: "/health within 100 ms while a provider hangs",
      met: r.health_latency_ms.p99 < 100,
      detail: `p50 ${r.health_latency_ms.p50.toFixed(2)} ms, p99 ${r.health_latency_ms.p99.toFixed(2)} ms, max ${r.health_latency_ms.max.toFixed(2)} ms over ${r.health_latency_ms.requests} requests`,
    },
  ];
}

export function restartLines(r: RestartResult): string[] {
  const f = (ms: number) => ms.toFixed(0);
  return [
    `\nrestart to healthy: a gateway on a store of ${r.store_messages} messages, SIGTERM then start, ${r.rows.length} times`,
    table(
      ["restart", "stop ms", "start to listening ms", "start to /health ok ms", "SIGTERM to /health ok ms"],
      r.rows.map((row, i) => [
        String(i + 1),
        f(row.stop_ms),
        f(row.listening_ms),
        f(row.healthy_ms),
        f(row.restart_to_healthy_ms),
      ]),
    ),
    `  /health while a turn hangs at the provider: p50 ${r.health_latency_ms.p50.toFixed(2)} ms, p99 ${r.health_latency_ms.p99.toFixed(2)} ms, max ${r.health_latency_ms.max.toFixed(2)} ms (${r.health_latency_ms.requests} requests)`,
  ];
}
