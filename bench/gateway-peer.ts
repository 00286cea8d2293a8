// The gateway side by side with a peer: what Tenax's gateway (the built CLI, storing every turn
// durably) and Portkey's open-source gateway (@portkey-ai/gateway, a proxy) add to a turn without
// tools over calling the simulator directly, Tenax in both its modes (`model: "tenax"`, an agent
// turn; `model: "sim/echo"`, one model call through the resilience core, stored as a session): latency at a fixed rate, maximum throughput, and the
// time to the first streamed token. A bare pass-through proxy (gateway-floor-child.ts) runs beside
// them as the floor: what the extra hop alone costs here. Simulator, load generator and each gateway
// run as separate processes, so none of them measures another's event loop; the targets take turns
// in shuffled rounds, so the machine's noise falls on all of them alike.
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadPlan, LoadResult, LoadTarget } from "./gateway-load.js";
import { type Child, launch, printedUrl, runLoad, stopAll, waitFor } from "./load-run.js";
import { type Aim, table } from "./report.js";
import { median } from "./stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const TENAX_BIN = fileURLToPath(new URL("../../bin/tenax.js", import.meta.url));
const PROMPT = "say something short about resilient agents";

export const GATEWAY_TARGETS = ["direct", "floor", "tenax", "tenax_model", "portkey"] as const;
export type GatewayTarget = (typeof GATEWAY_TARGETS)[number];
type Gateway = Exclude<GatewayTarget, "direct">;
const GATEWAYS = GATEWAY_TARGETS.filter((t): t is Gateway => t !== "direct");
/** The model the model-gateway mode is asked for: the simulator's, under its provider's name. */
const MODEL_ID = "sim/echo";
export const SERIAL_TARGETS = [
  "direct",
  "floor",
  "tenax",
  "tenax_model",
  "tenax_normal",
  "tenax_no_reread",
  "portkey",
] as const;
type SerialTarget = (typeof SERIAL_TARGETS)[number];

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
}

export interface GatewayPeerResult {
  settings: GatewaySettings;
  peer: { name: string; version: string; preload: string };
  isolation: string;
  /** Per target: the median over rounds of each round's figure, and the sums. */
  open: Record<
    GatewayTarget,
    {
      p50_ms: number;
      p99_ms: number;
      max_ms: number;
      achieved_rps: number;
      sent: number;
      errors: number;
      send_lag_p99_ms: number;
    }
  >;
  /** Per gateway: the median over rounds of (its round figure - the direct round figure of the same round). */
  added: Record<Gateway, { p50_ms: number; p99_ms: number }>;
  closed: Record<GatewayTarget, { rps: number; p50_ms: number; p99_ms: number; errors: number }>;
  /** One request at a time (median of rounds), Tenax also with synchronous=NORMAL for the breakdown. */
  serial: Record<SerialTarget, { p50_ms: number; p99_ms: number; errors: number }>;
  stream: Record<GatewayTarget, { ttft_p50_ms: number; ttft_p99_ms: number; n: number; errors: number }>;
  stream_added: Record<Gateway, { p50_ms: number; p99_ms: number }>;
  error_samples: Record<string, string[]>;
  raw: LoadResult;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function answers(url: string, headers: Record<string, string>, model = "echo"): Promise<void> {
  const deadline = performance.now() + 30_000;
  let last = "";
  while (performance.now() < deadline) {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, messages: [{ role: "user", content: "ready?" }] }),
      });
      last = `${res.status} ${await res.text()}`;
      if (res.ok) return;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never answered a chat request: ${last}`);
}

function peerInfo(): { entry: string; version: string } {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve("@portkey-ai/gateway/package.json");
  const pkg = require(pkgPath) as { version: string; bin: string | Record<string, string> };
  const bin = typeof pkg.bin === "string" ? pkg.bin : (Object.values(pkg.bin)[0] ?? "");
  return { entry: join(dirname(pkgPath), bin), version: pkg.version };
}

const JSON_HEADERS = { "content-type": "application/json" };
/** The Tenax gateways' key (given as TENAX_API_KEY), sent as their clients send it. */
const TENAX_KEY = "tnx-bench-gateway-key";
const TENAX_HEADERS = { ...JSON_HEADERS, authorization: `Bearer ${TENAX_KEY}` };

/** `tenax gateway run` (the built CLI) on a scratch home whose only provider is the simulator. */
async function startTenax(
  workDir: string,
  simUrl: string,
  turns: number,
  synchronous: "full" | "normal",
  profileDir: string | undefined,
  env: NodeJS.ProcessEnv = {},
): Promise<{ process: Child; url: string }> {
  const home = mkdtempSync(join(workDir, `gateway-peer-${synchronous}-`));
  writeFileSync(
    join(home, "config.yaml"),
    [
      "model: { provider: sim, name: echo }",
      "providers:",
      `  sim: { type: simulator, base_url: "${simUrl}", max_concurrency: ${turns} }`,
      `gateway: { drain_timeout: 1, max_turns: ${turns} }`,
      `store: { synchronous: ${synchronous} }`,
      "",
    ].join("\n"),
  );
  // BENCH_GATEWAY_PROFILE=DIR writes a V8 CPU profile of the Tenax gateway there, for diagnosis.
  const profileArgs = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  const child = launch([...profileArgs, TENAX_BIN, "gateway", "run", "--port", "0"], {
    ...process.env,
    ...env,
    TENAX_HOME: home,
    TENAX_PROFILE: "",
    TENAX_API_KEY: TENAX_KEY,
  });
  try {
    const url = await waitFor("the Tenax gateway", child, (out) => {
      const m = /gateway listening on (http:\/\/\S+)/.exec(out);
      return m?.[1] ?? null;
    });
    return { process: child, url };
  } catch (error) {
    child.child.kill("SIGKILL");
    throw error;
  }
}

export async function runGatewayPeerBench(
  workDir: string,
  settings: GatewaySettings,
  log: (line: string) => void,
): Promise<GatewayPeerResult> {
  const children: Child[] = [];
  try {
    const sim = launch([join(HERE, "gateway-sim-child.js")]);
    children.push(sim);
    const simUrl = await printedUrl("the simulator", sim);
    log(`  simulator: ${simUrl} (pid ${sim.child.pid})`);
    const floor = launch([join(HERE, "gateway-floor-child.js"), simUrl]);
    children.push(floor);
    const floorUrl = await printedUrl("the floor proxy", floor);

    const turns = Math.max(1024, settings.closedClients * 4);
    const tenax = await startTenax(workDir, simUrl, turns, "full", process.env.BENCH_GATEWAY_PROFILE);
    children.push(tenax.process);
    log(`  Tenax gateway: ${tenax.url} (pid ${tenax.process.child.pid})`);
    // The same gateway with synchronous=NORMAL (no fsync per commit), measured one request at a
    // time only: what the durable commits cost, for the breakdown. Never a default.
    const normal = await startTenax(workDir, simUrl, turns, "normal", undefined);
    children.push(normal.process);
    // And durable, but keeping its page cache across writes (TENAX_STORE_REREAD=off): what the
    // store's re-read of every page a write touches (damage is caught by the next write) costs.
    const noReread = await startTenax(workDir, simUrl, turns, "full", undefined, {
      TENAX_STORE_REREAD: "off",
    });
    children.push(noReread.process);

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
    for (const t of [tenax, normal, noReread])
      await answers(`${t.url}/v1/chat/completions`, TENAX_HEADERS, "tenax");
    await answers(`${tenax.url}/v1/chat/completions`, TENAX_HEADERS, MODEL_ID);

    const sim0 = new URL(simUrl);
    const targets: LoadTarget[] = [
      {
        name: "direct",
        origin: sim0.origin,
        path: `${sim0.pathname}/chat/completions`,
        headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
      },
      { name: "floor", origin: floorUrl, path: "/", headers: JSON_HEADERS },
      {
        name: "tenax",
        origin: new URL(tenax.url).origin,
        path: "/v1/chat/completions",
        headers: TENAX_HEADERS,
        model: "tenax",
      },
      // The same gateway process in its other mode: the targets take turns, never at once.
      {
        name: "tenax_model",
        origin: new URL(tenax.url).origin,
        path: "/v1/chat/completions",
        headers: TENAX_HEADERS,
        model: MODEL_ID,
      },
      { name: "portkey", origin: portkeyOrigin, path: "/v1/chat/completions", headers: portkeyHeaders },
    ];
    const plan: LoadPlan = {
      targets,
      diagnosticTargets: [
        {
          name: "tenax_normal",
          origin: new URL(normal.url).origin,
          path: "/v1/chat/completions",
          headers: TENAX_HEADERS,
          model: "tenax",
        },
        {
          name: "tenax_no_reread",
          origin: new URL(noReread.url).origin,
          path: "/v1/chat/completions",
          headers: TENAX_HEADERS,
          model: "tenax",
        },
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
    return summarize(settings, await runLoad(plan, log), peer.version);
  } finally {
    await stopAll(children);
  }
}

function summarize(settings: GatewaySettings, raw: LoadResult, peerVersion: string): GatewayPeerResult {
  const rounds = (t: GatewayTarget) => raw.open.filter((r) => r.target === t);
  const open = Object.fromEntries(
    GATEWAY_TARGETS.map((t) => {
      const rs = rounds(t);
      return [
        t,
        {
          p50_ms: median(rs.map((r) => r.latency.p50_ms)),
          p99_ms: median(rs.map((r) => r.latency.p99_ms)),
          max_ms: Math.max(...rs.map((r) => r.latency.max_ms)),
          achieved_rps: median(rs.map((r) => r.achieved_rps)),
          sent: rs.reduce((a, r) => a + r.sent, 0),
          errors: rs.reduce((a, r) => a + r.errors, 0),
          send_lag_p99_ms: median(rs.map((r) => r.send_lag_p99_ms)),
        },
      ];
    }),
  ) as GatewayPeerResult["open"];
  const addedOver = (t: Gateway, key: "p50_ms" | "p99_ms") => {
    const base = rounds("direct");
    return median(
      rounds(t).map(
        (r) => r.latency[key] - (base.find((b) => b.round === r.round)?.latency[key] ?? Number.NaN),
      ),
    );
  };
  const closed = Object.fromEntries(
    GATEWAY_TARGETS.map((t) => {
      const rs = raw.closed.filter((r) => r.target === t);
      return [
        t,
        {
          rps: median(rs.map((r) => r.rps)),
          p50_ms: median(rs.map((r) => r.latency.p50_ms)),
          p99_ms: median(rs.map((r) => r.latency.p99_ms)),
          errors: rs.reduce((a, r) => a + r.errors, 0),
        },
      ];
    }),
  ) as GatewayPeerResult["closed"];
  const serial = Object.fromEntries(
    SERIAL_TARGETS.map((t) => {
      const rs = raw.serial.filter((r) => r.target === t);
      return [
        t,
        {
          p50_ms: median(rs.map((r) => r.latency.p50_ms)),
          p99_ms: median(rs.map((r) => r.latency.p99_ms)),
          errors: rs.reduce((a, r) => a + r.errors, 0),
        },
      ];
    }),
  ) as GatewayPeerResult["serial"];
  const streamOf = (t: GatewayTarget) => raw.stream.find((s) => s.target === t);
  const stream = Object.fromEntries(
    GATEWAY_TARGETS.map((t) => {
      const s = streamOf(t);
      return [
        t,
        {
          ttft_p50_ms: s?.ttft.p50_ms ?? Number.NaN,
          ttft_p99_ms: s?.ttft.p99_ms ?? Number.NaN,
          n: s?.ok ?? 0,
          errors: s?.errors ?? 0,
        },
      ];
    }),
  ) as GatewayPeerResult["stream"];
  const streamAdded = (t: Gateway) => ({
    p50_ms: stream[t].ttft_p50_ms - stream.direct.ttft_p50_ms,
    p99_ms: stream[t].ttft_p99_ms - stream.direct.ttft_p99_ms,
  });
  return {
    settings,
    peer: {
      name: "@portkey-ai/gateway",
      version: peerVersion,
      preload:
        "bench/gateway-peer-fetch.ts (fetch responses get mutable headers; without it its streaming fails on Node)",
    },
    isolation:
      "simulator, floor proxy, Tenax gateway, Portkey gateway and load generator each in its own Node process (no shared event loop); targets take turns in shuffled rounds",
    open,
    added: Object.fromEntries(
      GATEWAYS.map((t) => [t, { p50_ms: addedOver(t, "p50_ms"), p99_ms: addedOver(t, "p99_ms") }]),
    ) as GatewayPeerResult["added"],
    closed,
    serial,
    stream,
    stream_added: Object.fromEntries(
      GATEWAYS.map((t) => [t, streamAdded(t)]),
    ) as GatewayPeerResult["stream_added"],
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
  tenax: "Tenax gateway, model tenax (agent turn stored, synchronous=FULL)",
  tenax_model: `Tenax gateway, model ${MODEL_ID} (one model call stored, synchronous=FULL)`,
  portkey: "Portkey gateway (proxy, nothing stored)",
};

const DIAGNOSES = {
  tenax_normal: "Tenax gateway, synchronous=NORMAL (diagnosis only)",
  tenax_no_reread: "Tenax gateway, pages kept across writes (diagnosis only)",
};

export function gatewayLines(r: GatewayPeerResult): string[] {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "-");
  const plus = (n: number) => (Number.isFinite(n) ? `${n >= 0 ? "+" : ""}${n.toFixed(2)}` : "-");
  const s = r.settings;
  const lines = [
    `\ngateway vs peer, a turn without tools: open loop at ${s.rps}/s, ${s.seconds} s per target in ${s.rounds} shuffled rounds (median of rounds; latency from the scheduled send)`,
    table(
      ["target", "p50 ms", "p99 ms", "max ms", "added p50", "added p99", "errors", "achieved /s"],
      GATEWAY_TARGETS.map((t) => [
        LABELS[t],
        f(r.open[t].p50_ms),
        f(r.open[t].p99_ms),
        f(r.open[t].max_ms),
        t === "direct" ? "" : plus(r.added[t].p50_ms),
        t === "direct" ? "" : plus(r.added[t].p99_ms),
        `${r.open[t].errors}/${r.open[t].sent}`,
        r.open[t].achieved_rps.toFixed(0),
      ]),
    ),
    `  the load generator's own send lag, p99: ${GATEWAY_TARGETS.map((t) => `${t} ${f(r.open[t].send_lag_p99_ms)} ms`).join(", ")}`,
    `\nclosed loop: ${s.closedClients} clients as fast as answered, ${s.closedSeconds} s per target x ${s.closedRounds} rounds (median)`,
    table(
      ["target", "requests/s", "p50 ms", "p99 ms", "errors"],
      GATEWAY_TARGETS.map((t) => [
        LABELS[t],
        r.closed[t].rps.toFixed(0),
        f(r.closed[t].p50_ms),
        f(r.closed[t].p99_ms),
        String(r.closed[t].errors),
      ]),
    ),
    `\none request at a time (one client), ${s.closedSeconds} s per target x ${s.closedRounds} rounds (median): the cost per turn without queueing`,
    table(
      ["target", "p50 ms", "p99 ms", "added p50", "added p99", "errors"],
      SERIAL_TARGETS.map((t) => [
        DIAGNOSES[t as keyof typeof DIAGNOSES] ?? LABELS[t as GatewayTarget],
        f(r.serial[t].p50_ms),
        f(r.serial[t].p99_ms),
        t === "direct" ? "" : plus(r.serial[t].p50_ms - r.serial.direct.p50_ms),
        t === "direct" ? "" : plus(r.serial[t].p99_ms - r.serial.direct.p99_ms),
        String(r.serial[t].errors),
      ]),
    ),
    `\nstreaming time to first content token: ${s.streams} requests per target, one at a time, interleaved`,
    table(
      ["target", "TTFT p50 ms", "TTFT p99 ms", "added p50", "added p99", "errors"],
      GATEWAY_TARGETS.map((t) => [
        LABELS[t],
        f(r.stream[t].ttft_p50_ms),
        f(r.stream[t].ttft_p99_ms),
        t === "direct" ? "" : plus(r.stream_added[t].p50_ms),
        t === "direct" ? "" : plus(r.stream_added[t].p99_ms),
        String(r.stream[t].errors),
      ]),
    ),
    `  isolation: ${r.isolation}; peer ${r.peer.name} ${r.peer.version} with ${r.peer.preload}`,
  ];
  for (const [target, samples] of Object.entries(r.error_samples)) {
    lines.push(`  ${target} errors, first ones: ${samples.join(" | ")}`);
  }
  return lines;
}
