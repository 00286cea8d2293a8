// 1,000 subagents delegated and finished, and the memory they leave behind: a child process (node
// --expose-gc, so the heap is read after full collections) runs parent turns that call the real
// delegate_task tool; the simulator answers from this process, so its request records never count
// in the child's heap.
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSimulator } from "../src/llm/simulator/server.js";
import { type Aim, int, table } from "./report.js";
import type { ChildInput, ChildOutput, HeapFigures } from "./subagents-child.js";

export interface SubagentResult {
  settings: Omit<ChildInput, "simUrl" | "home">;
  before: HeapFigures;
  after_run: HeapFigures;
  after_gc: HeapFigures;
  series: Array<[number, number]>;
  subagents_run: number;
  subagents_completed: number;
  parent_turns: number;
  run_ms: number;
  /** Heap used after the final collection minus before, in bytes. */
  retained_bytes: number;
  retained_bytes_per_subagent: number;
  /** The least-squares slope of heap used after each batch's collection, in bytes per subagent. */
  slope_bytes_per_subagent: number;
}

const CHILD = fileURLToPath(new URL("./subagents-child.js", import.meta.url));

export async function runSubagentBench(
  workDir: string,
  settings: Omit<ChildInput, "simUrl" | "home">,
  log: (line: string) => void,
): Promise<SubagentResult> {
  const sim = await startSimulator({ models: { echo: { context_window: 10_000_000 } } });
  try {
    const home = mkdtempSync(join(workDir, "subagents-"));
    const input: ChildInput = { ...settings, simUrl: sim.url, home };
    const output = await new Promise<ChildOutput>((resolve, reject) => {
      const child = execFile(
        process.execPath,
        ["--expose-gc", CHILD, JSON.stringify(input)],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, stdout) => {
          if (error) reject(error);
          else resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as ChildOutput);
        },
      );
      child.stderr?.on("data", (piece: Buffer) => log(piece.toString().trimEnd()));
    });
    const retained = output.after_gc.heap_used - output.before.heap_used;
    return {
      settings,
      ...output,
      retained_bytes: retained,
      retained_bytes_per_subagent: retained / Math.max(1, output.subagents_run),
      slope_bytes_per_subagent: slope(output.series),
    };
  } finally {
    await sim.close();
  }
}

function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** "Near its start": less than 1 KiB a subagent left on the heap after the final collection. */
export const RETAINED_MAX_BYTES_PER_SUBAGENT = 1024;

export function judgeSubagentAim(r: SubagentResult): Aim {
  return {
    aim: `${int(r.subagents_run)} subagents: memory returns near its start`,
    met:
      r.subagents_completed === r.settings.subagents &&
      r.retained_bytes_per_subagent < RETAINED_MAX_BYTES_PER_SUBAGENT,
    detail:
      `heap used ${mb(r.before.heap_used)} MiB before, ${mb(r.after_run.heap_used)} MiB after, ` +
      `${mb(r.after_gc.heap_used)} MiB after a full collection: ${mb(r.retained_bytes)} MiB retained, ` +
      `${(r.retained_bytes_per_subagent / 1024).toFixed(2)} KiB per subagent`,
  };
}

export function subagentLines(r: SubagentResult): string[] {
  const s = r.settings;
  const row = (label: string, h: HeapFigures) => [
    label,
    mb(h.heap_used),
    mb(h.heap_total),
    mb(h.external),
    mb(h.rss),
  ];
  return [
    `\n${int(r.subagents_completed)} of ${int(s.subagents)} subagents completed through delegate_task ` +
      `(${r.parent_turns} parent turns of ${s.perTurn}, ${s.perStep} calls a message, max_subagents ${s.maxSubagents}, ` +
      `after ${s.warmup} to warm up) in ${(r.run_ms / 1000).toFixed(1)} s`,
    table(
      ["heap", "used MiB", "total MiB", "external MiB", "rss MiB"],
      [
        row("before (after a full collection)", r.before),
        row("after the last subagent", r.after_run),
        row("after a full collection", r.after_gc),
      ],
    ),
    `  retained ${mb(r.retained_bytes)} MiB, ${(r.retained_bytes_per_subagent / 1024).toFixed(2)} KiB per subagent; ` +
      `slope of heap used after each batch ${(r.slope_bytes_per_subagent / 1024).toFixed(2)} KiB per subagent`,
    `  heap used after each batch (MiB): ${r.series.map(([n, b]) => `${n}: ${mb(b)}`).join(", ")}`,
  ];
}

function mb(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(2);
}
