// The child process of the subagent bench (run with --expose-gc): an agent over a fresh profile
// whose parent turns delegate to subagents through the real delegate_task tool, against the
// simulator of the parent process, with the heap measured after a full collection between batches.
// Prints one JSON document on stdout; progress goes to stderr.
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { Agent } from "../src/agent/agent.js";
import { configSchema } from "../src/config/schema.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";

export interface ChildInput {
  simUrl: string;
  home: string;
  /** Subagents measured, after the warm-up. */
  subagents: number;
  /** Subagents each parent turn delegates to. */
  perTurn: number;
  /** delegate_task calls in one assistant message. */
  perStep: number;
  warmup: number;
  maxSubagents: number;
  /** When set, heap snapshots are written there before and after, to find what is retained. */
  snapshotDir?: string;
}

export interface HeapFigures {
  heap_used: number;
  heap_total: number;
  external: number;
  array_buffers: number;
  rss: number;
}

export interface ChildOutput {
  before: HeapFigures;
  /** Right after the last subagent finished, before any collection. */
  after_run: HeapFigures;
  after_gc: HeapFigures;
  /** Heap used after a full collection, after each parent turn: [subagents so far, bytes]. */
  series: Array<[number, number]>;
  subagents_run: number;
  subagents_completed: number;
  parent_turns: number;
  run_ms: number;
}

const MODEL = "echo";
const KEY = "sk-bench";

const input = JSON.parse(process.argv[2] ?? "{}") as ChildInput;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const collect = gc;
const log = (line: string) => process.stderr.write(`${line}\n`);
const control = `${input.simUrl.replace(/\/v1$/, "")}/__sim`;

async function main(): Promise<void> {
  const paths = profilePaths(input.home, "default");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const config = configSchema.parse({
    model: { provider: "sim", name: MODEL },
    providers: {
      sim: {
        type: "simulator",
        base_url: input.simUrl,
        api_keys: [KEY],
        models: { [MODEL]: { context_window: 10_000_000, max_output_tokens: 4096 } },
      },
    },
    // A parent turn makes perTurn / perStep + 1 model calls, well inside agent.max_iterations.
    agent: { max_subagents: input.maxSubagents },
  });
  const agent = await Agent.create({ paths, config, store });
  try {
    const parent = await agent.newSession({ title: "bench parent", source: "bench" });
    let next = 0;
    const turn = async (count: number) => {
      const first = next;
      next += count;
      return parentTurn(agent, parent, first, count);
    };
    await turn(input.warmup);
    const before = await settled(store);
    snapshot("before");

    const started = performance.now();
    const series: Array<[number, number]> = [[0, before.heap_used]];
    let done = 0;
    let turns = 0;
    let afterRun = before;
    while (done < input.subagents) {
      const count = Math.min(input.perTurn, input.subagents - done);
      await turn(count);
      done += count;
      turns++;
      if (done >= input.subagents) {
        afterRun = heap();
        break;
      }
      series.push([done, (await settled(store)).heap_used]);
      log(`  ${done} subagents`);
    }
    const runMs = performance.now() - started;
    const afterGc = await settled(store);
    snapshot("after");
    series.push([done, afterGc.heap_used]);
    log(`  ${done} subagents`);

    // Checked after the figures, so reading the transcript back does not count in them.
    const results = (await store.getMessages(parent))
      .filter((m) => m.role === "tool" && m.name === "delegate_task")
      .map((m) => JSON.parse(m.content ?? "{}") as { status?: string });
    const output: ChildOutput = {
      before,
      after_run: afterRun,
      after_gc: afterGc,
      series,
      subagents_run: results.length - input.warmup,
      subagents_completed: results.filter((r) => r.status === "completed").length - input.warmup,
      parent_turns: turns,
      run_ms: runMs,
    };
    process.stdout.write(`${JSON.stringify(output)}\n`);
  } finally {
    await agent.close();
    await releaseStore(store);
  }
}

/**
 * One parent turn that delegates `count` subagents, `perStep` to an assistant message: the
 * simulator answers the parent with the calls, each subagent with one reply, the parent last with
 * its answer. The tools run a message's calls one after another, so the steps come in that order.
 */
async function parentTurn(agent: Agent, parent: string, first: number, count: number): Promise<void> {
  const steps: SimStep[] = [];
  for (let at = first; at < first + count; at += input.perStep) {
    const ids = Array.from({ length: Math.min(input.perStep, first + count - at) }, (_, i) => at + i);
    steps.push({
      type: "tool_calls",
      calls: ids.map((i) => ({
        name: "delegate_task",
        arguments: { task: `Subtask ${i}: check item ${i} and say it is done.`, title: `item ${i}` },
      })),
    });
    for (const i of ids) steps.push({ type: "reply", text: `Item ${i} is done.` });
  }
  steps.push({ type: "reply", text: `All ${count} items are done.` });
  // The simulator's records of earlier turns are the parent process's memory, not this one's.
  await post(`${control}/reset`, null);
  await post(`${control}/script`, steps);
  const result = await agent.turn({
    sessionId: parent,
    text: `Delegate items ${first} to ${first + count - 1}.`,
    cwd: input.home,
  });
  if (result.status !== "completed")
    throw new Error(`the parent turn ended ${result.status}: ${result.error}`);
}

async function post(url: string, body: unknown): Promise<void> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === null ? "" : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  await response.arrayBuffer();
}

/** The heap once the work is written out and every collectable object is collected. */
async function settled(store: Store): Promise<HeapFigures> {
  store.index.flush();
  for (let i = 0; i < 3; i++) {
    // Let finalizers, WeakRefs and closed sockets settle between full collections.
    await new Promise((resolve) => setTimeout(resolve, 20));
    collect();
  }
  return heap();
}

function snapshot(name: string): void {
  if (input.snapshotDir === undefined) return;
  log(`  heap snapshot: ${writeHeapSnapshot(join(input.snapshotDir, `subagents-${name}.heapsnapshot`))}`);
}

function heap(): HeapFigures {
  const m = process.memoryUsage();
  return {
    heap_used: m.heapUsed,
    heap_total: m.heapTotal,
    external: m.external,
    array_buffers: m.arrayBuffers,
    rss: m.rss,
  };
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
