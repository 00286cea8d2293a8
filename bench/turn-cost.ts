// What one request costs each gateway, side by side, one request at a time: the simulator alone,
// Portkey's gateway, and Tenax gateways (this checkout's, and any other built checkout's) as an
// agent turn and as a model call. Beside each target's latency: the CPU its process used per
// request (user + system, every thread, from /proc) and how often per request its main thread and
// all its threads went to sleep and were woken (voluntary context switches). A proxy that spends
// as much CPU as another but sleeps and wakes more often per request answers later: each wake-up
// of a sleeping thread costs a scheduler hand-off, which on a busy or virtual machine is slow.
//
//   npm run build && tsc -p bench/tsconfig.json
//   node dist-bench/bench/turn-cost.js [--requests N] [--before DIR]
//
// The targets take turns in a new random order for each of the N rounds (default 1,000, after
// 300 warm-up rounds); "added" is a target's p50 minus the simulator's. The simulator's own CPU
// counts the requests of every target, so its per-request figure is the sum over them.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { peerInfo } from "./gateway-peer.js";
import { type Child, freePort, launch, printedUrl, stopAll } from "./load-run.js";
import { answers, JSON_HEADERS, launchTenax, TENAX_HEADERS, tenaxHome } from "./tenax-gateway.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PROMPT = "say something short about resilient agents";
/** The clock ticks of /proc/PID/stat (USER_HZ), in ms. */
const TICK_MS = 10;

interface Target {
  name: string;
  pid: number;
  pool: Pool;
  headers: Record<string, string>;
  body: string;
  ms: number[];
}

interface Usage {
  cpuMs: number;
  mainSwitches: number;
  allSwitches: number;
}

function usage(pid: number): Usage {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpuMs = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  let mainSwitches = 0;
  let allSwitches = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${task}/status`, "utf8");
    const n = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    allSwitches += n;
    if (task === String(pid)) mainSwitches = n;
  }
  return { cpuMs, mainSwitches, allSwitches };
}

function target(
  name: string,
  child: Child,
  url: string,
  headers: Record<string, string>,
  model: string,
): Target {
  const pid = child.child.pid;
  if (pid === undefined) throw new Error(`${name} has no process id`);
  return {
    name,
    pid,
    pool: new Pool(new URL(url).origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 }),
    headers,
    body: JSON.stringify({ model, messages: [{ role: "user", content: PROMPT }] }),
    ms: [],
  };
}

async function once(t: Target): Promise<number> {
  const started = performance.now();
  const res = await t.pool.request({
    path: "/v1/chat/completions",
    method: "POST",
    headers: t.headers,
    body: t.body,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${t.name} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return performance.now() - started;
}

async function portkey(simUrl: string, children: Child[]): Promise<Target> {
  const port = await freePort();
  const child = launch([
    "--import",
    join(HERE, "gateway-peer-fetch.js"),
    peerInfo().entry,
    `--port=${port}`,
    "--headless",
  ]);
  children.push(child);
  const headers = {
    ...JSON_HEADERS,
    authorization: "Bearer sk-bench",
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": simUrl,
  };
  const url = `http://127.0.0.1:${port}`;
  await answers(`${url}/v1/chat/completions`, headers);
  return target("Portkey (proxy, nothing stored)", child, url, headers, "echo");
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))] ?? Number.NaN;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { requests: { type: "string", default: "1000" }, before: { type: "string" } },
  });
  const requests = Number(values.requests);
  const work = mkdtempSync(join(tmpdir(), "tenax-turn-cost-"));
  const children: Child[] = [];
  try {
    const sim = launch([join(HERE, "gateway-sim-child.js")]);
    children.push(sim);
    const simUrl = await printedUrl("the simulator", sim);
    const targets = [target("the simulator directly", sim, simUrl, JSON_HEADERS, "echo")];
    targets.push(await portkey(simUrl, children));
    const checkouts: [string, string][] = [["Tenax", join(HERE, "../..")]];
    if (values.before) checkouts.push(["Tenax before", values.before]);
    for (const [name, dir] of checkouts) {
      const home = tenaxHome(work, simUrl, 64, { synchronous: "full" });
      const g = await launchTenax(home, { synchronous: "full", bin: join(dir, "bin/tenax.js") });
      children.push(g.process);
      targets.push(target(`${name}, agent turn`, g.process, g.url, TENAX_HEADERS, "tenax"));
      targets.push(target(`${name}, model call`, g.process, g.url, TENAX_HEADERS, "sim/echo"));
    }
    for (let i = 0; i < 300; i++) for (const t of targets) await once(t);
    // CPU and wake-ups: each target alone for a run of requests (a Tenax gateway serves two targets,
    // and the simulator answers every target's requests, so their processes are read per run).
    const cost = new Map<Target, Usage>();
    const n = Math.min(requests, 500);
    for (const t of targets) {
      const before = usage(t.pid);
      for (let i = 0; i < n; i++) await once(t);
      const after = usage(t.pid);
      cost.set(t, {
        cpuMs: (after.cpuMs - before.cpuMs) / n,
        mainSwitches: (after.mainSwitches - before.mainSwitches) / n,
        allSwitches: (after.allSwitches - before.allSwitches) / n,
      });
    }
    // Latency: every target in each round, in a new random order.
    for (let i = 0; i < requests; i++) {
      const order = [...targets].sort(() => Math.random() - 0.5);
      for (const t of order) t.ms.push(await once(t));
    }
    const direct = quantile(targets[0]?.ms ?? [], 0.5);
    const rows = targets.map((t) => {
      const c = cost.get(t);
      const p50 = quantile(t.ms, 0.5);
      return [
        t.name,
        p50.toFixed(2),
        quantile(t.ms, 0.99).toFixed(2),
        t === targets[0] ? "" : `+${(p50 - direct).toFixed(2)}`,
        c ? c.cpuMs.toFixed(2) : "",
        c ? c.mainSwitches.toFixed(2) : "",
        c ? c.allSwitches.toFixed(2) : "",
      ];
    });
    const head = ["target", "p50 ms", "p99 ms", "added p50", "CPU ms/req", "main wakes/req", "all wakes/req"];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (r: string[]) =>
      r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
    process.stdout.write(
      `one request at a time, ${requests} rounds in random order (after 300 warm-up); CPU and wake-ups of the target's own process over ${n} requests to it alone\n`,
    );
    process.stdout.write(
      `${[line(head), line(head.map((_, i) => "-".repeat(widths[i] ?? 0))), ...rows.map(line)].join("\n")}\n`,
    );
    for (const t of targets) await t.pool.close();
  } finally {
    await stopAll(children);
  }
}

await main();
