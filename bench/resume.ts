// 100 sessions a crash interrupted, resumed at once: the time from the start of the resume (reap
// included) until every resumed turn has completed against a simulator in this process. Half the
// turns had a write in flight (answered as not run again), half a read (run again).
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent } from "../src/agent/agent.js";
import { type HostedWork, resumeInterrupted } from "../src/agent/resume.js";
import { configSchema } from "../src/config/schema.js";
import { startSimulator } from "../src/llm/simulator/server.js";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { type Aim, int, table } from "./report.js";

export interface ResumeBenchResult {
  sessions: number;
  max_concurrency: number;
  /** Reaping the interrupted turns (the first step of a start after a crash). */
  reap_ms: number;
  /** From the start of the resume until the last resumed turn completed. */
  total_ms: number;
  completed: number;
  model_requests: number;
  /** Each resumed turn's time from the start of the resume to its end. */
  turn_p50_ms: number;
  turn_max_ms: number;
}

/** The aim: 100 interrupted sessions resumed and completed in under 2 s. */
export const RESUME_AIM_MS = 2000;

export async function runResumeBench(
  workDir: string,
  settings: { sessions: number; maxConcurrency: number },
  log: (line: string) => void,
): Promise<ResumeBenchResult> {
  const sim = await startSimulator();
  const home = mkdtempSync(join(workDir, "resume-"));
  const paths = profilePaths(home, "default");
  const project = mkdtempSync(join(workDir, "resume-project-"));
  writeFileSync(join(project, "notes.txt"), "what the read finds\n");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        api_keys: ["sk-bench"],
        max_concurrency: settings.maxConcurrency,
      },
    },
  });
  const agent = await Agent.create({ paths, config, store });
  try {
    const owner = `pid:${await deadPid()}`;
    for (let i = 0; i < settings.sessions; i++) {
      const session = await agent.newSession({ title: `interrupted ${i}` });
      const turn = await store.startTurn(session, 600_000, owner);
      const call =
        i % 2 === 0
          ? {
              id: `c${i}`,
              name: "write_file",
              arguments: JSON.stringify({ path: `out-${i}.txt`, content: "x" }),
            }
          : { id: `c${i}`, name: "read_file", arguments: JSON.stringify({ path: "notes.txt" }) };
      await store.appendMessages([
        { session_id: session, role: "user", content: `task ${i}`, turn_id: turn },
        { session_id: session, role: "assistant", content: null, tool_calls: [call], turn_id: turn },
      ]);
    }
    log(`  ${int(settings.sessions)} sessions with a turn in flight, owner ${owner} (gone)`);
    const started = performance.now();
    const reaped = await agent.reap();
    const reapMs = performance.now() - started;
    const ended: number[] = [];
    const report = await resumeInterrupted({
      agent,
      reaped,
      autoResume: true,
      cwd: project,
      host: {
        track: (_session: string, work: HostedWork) => ({
          result: work(new AbortController().signal, () => {}).finally(() =>
            ended.push(performance.now() - started),
          ),
        }),
        isRunning: () => false,
        interrupt: () => false,
      },
    });
    const results = await Promise.all(report.resumed.map((r) => r.result));
    const totalMs = performance.now() - started;
    ended.sort((a, b) => a - b);
    return {
      sessions: settings.sessions,
      max_concurrency: settings.maxConcurrency,
      reap_ms: reapMs,
      total_ms: totalMs,
      completed: results.filter((r) => r.status === "completed").length,
      model_requests: sim.requests().length,
      turn_p50_ms: ended[Math.floor(ended.length / 2)] ?? Number.NaN,
      turn_max_ms: ended.at(-1) ?? Number.NaN,
    };
  } finally {
    await agent.close();
    await releaseStore(store);
    await sim.close();
  }
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.on("close", resolve));
  return child.pid ?? 0;
}

export function judgeResumeAim(r: ResumeBenchResult): Aim {
  return {
    aim: `${int(r.sessions)} interrupted sessions resumed and completed in under ${RESUME_AIM_MS / 1000} s`,
    met: r.completed === r.sessions && r.total_ms < RESUME_AIM_MS,
    detail: `${int(r.completed)} completed in ${r.total_ms.toFixed(0)} ms (reap ${r.reap_ms.toFixed(0)} ms), provider max_concurrency ${r.max_concurrency}`,
  };
}

export function resumeLines(r: ResumeBenchResult): string[] {
  return [
    `\nresume of ${int(r.sessions)} interrupted sessions (in-process simulator, provider max_concurrency ${r.max_concurrency})`,
    table(
      ["reap ms", "all completed ms", "turn p50 ms", "turn max ms", "completed", "model requests"],
      [
        [
          r.reap_ms.toFixed(1),
          r.total_ms.toFixed(0),
          r.turn_p50_ms.toFixed(0),
          r.turn_max_ms.toFixed(0),
          int(r.completed),
          int(r.model_requests),
        ],
      ],
    ),
  ];
}
