// What the bubblewrap sandbox adds to starting a command: `true` started through the process
// registry and waited for (its end and its pipes), 30 times on the machine and 30 times in the
// sandbox, twice each, medians and p90. Run it with
// `npx tsc -p bench/tsconfig.json && node dist-bench/bench/sandbox-start.js` (needs bwrap on PATH).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProcessRegistry } from "../src/agent/processes.js";
import { chooseSandbox } from "../src/agent/sandbox/sandbox.js";

async function timings(registry: ProcessRegistry, cwd: string, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const handle = await registry.launch("true", { cwd, taskId: "bench", foreground: true });
    await handle.waitForExit(AbortSignal.timeout(10_000));
    await handle.settle(1_000);
    handle.forget();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

const at = (sorted: number[], q: number) =>
  Number((sorted[Math.floor(q * (sorted.length - 1))] ?? 0).toFixed(1));

export async function runSandboxStartBench(
  runs = 30,
): Promise<Record<string, { median_ms: number; p90_ms: number }[]>> {
  const dir = mkdtempSync(join(tmpdir(), "tenax-bench-sandbox-"));
  try {
    const home = join(dir, ".tenax");
    const choice = await chooseSandbox("bwrap", {
      profile: { home, dir: home },
      roots: [],
      env: process.env,
      execPath: process.execPath,
    });
    const out: Record<string, { median_ms: number; p90_ms: number }[]> = { machine: [], bwrap: [] };
    for (let round = 0; round < 2; round++)
      for (const [name, sandbox] of [
        ["machine", null],
        ["bwrap", choice.sandbox],
      ] as const) {
        const registry = new ProcessRegistry({ sandbox });
        const sorted = await timings(registry, dir, runs);
        await registry.cleanupAll();
        out[name]?.push({ median_ms: at(sorted, 0.5), p90_ms: at(sorted, 0.9) });
      }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  console.log(JSON.stringify(await runSandboxStartBench(), null, 1));
