// The simulator provider's latency, one request at a time: a non-streamed and a streamed chat
// completion over a kept-alive connection on 127.0.0.1, p50 and p99. Run it on two builds (before
// and after a change to the simulator's server) one after the other to compare them:
//   npm run build && npx tsc -p bench/tsconfig.json && node dist-bench/bench/simulator-latency.js [N]
import { Agent, request } from "node:http";
import { startSimulator } from "../src/llm/simulator/server.js";
import { ms, table } from "./report.js";
import { latency } from "./stats.js";

const N = Number(process.argv[2] ?? 3000);
const WARMUP = 300;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function body(stream: boolean): string {
  return JSON.stringify({
    model: "echo",
    messages: [{ role: "user", content: "say something short about resilient agents" }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

/** One POST, its whole answer read; resolves with the milliseconds it took. */
function once(port: number, payload: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/v1/chat/completions",
        method: "POST",
        agent,
        headers: { "content-type": "application/json", authorization: "Bearer bench" },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.resume();
        res.on("end", () => resolve(performance.now() - started));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

async function series(port: number, stream: boolean): Promise<number[]> {
  const payload = body(stream);
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + N; i++) {
    const took = await once(port, payload);
    if (i >= WARMUP) samples.push(took);
  }
  return samples;
}

const sim = await startSimulator();
const rows: string[][] = [];
const figures: Record<string, ReturnType<typeof latency>> = {};
for (const stream of [false, true]) {
  const name = stream ? "streamed" : "non-streamed";
  // Forget the records of the last series: the simulator keeps every request it received.
  sim.reset();
  const result = latency(await series(sim.port, stream));
  figures[name] = result;
  rows.push([name, String(result.n), ms(result.p50_ms), ms(result.p99_ms)]);
}
await sim.close();
agent.destroy();
console.log(table(["chat completion", "n", "p50 ms", "p99 ms"], rows));
console.log(JSON.stringify(figures));
