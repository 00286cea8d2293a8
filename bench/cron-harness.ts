// One gateway's cron, wired as src/gateway/run.ts wires it, in this process: a real store in a temp
// profile, a real agent over a simulator on real HTTP (the echo model: one model call a turn), a
// real Gateway, and the engine on the agent's own Scheduler with the real clock. The gateway's
// launch is wrapped only to watch it: the peak of turnsInFlight at every admission and every
// refusal for gateway.max_turns.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Agent } from "../src/agent/agent.js";
import { configSchema, type TenaxConfig } from "../src/config/schema.js";
import { CronEngine } from "../src/cron/engine.js";
import { CronJobs } from "../src/cron/jobs.js";
import { gatewayCronHost } from "../src/gateway/cron-host.js";
import { Gateway } from "../src/gateway/gateway.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";

export interface HarnessSettings {
  maxTurns: number;
  maxConcurrent: number;
  /** The simulator provider's max_concurrency (model calls at once). */
  providerConcurrency: number;
}

export interface Watch {
  /** The most turns in flight seen: at every admission, and every few ms by a sampler. */
  peakInFlight: number;
  /** Launches the gateway refused with too_many_turns (the runner retries them). */
  refused: number;
  /** Turns the gateway admitted for cron runs, with when (Date.now()). */
  launchedAt: number[];
  /** When each run's end was written (Date.now() at its cron_run_finished event). */
  finishedAt: number[];
  warnings: string[];
}

export interface Harness {
  sim: Simulator;
  store: Store;
  agent: Agent;
  gateway: Gateway;
  engine: CronEngine;
  jobs: CronJobs;
  config: TenaxConfig;
  watch: Watch;
  /** Start the engine on the agent's scheduler, as the gateway does once it serves. */
  start(): void;
  close(): Promise<void>;
}

export async function openHarness(workDir: string, settings: HarnessSettings): Promise<Harness> {
  const sim = await startSimulator();
  const home = mkdtempSync(join(workDir, "cron-"));
  const project = mkdtempSync(join(workDir, "cron-project-"));
  const paths = profilePaths(home, "default");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        api_keys: ["sk-bench"],
        max_concurrency: settings.providerConcurrency,
      },
    },
    gateway: { max_turns: settings.maxTurns },
    cron: { max_concurrent: settings.maxConcurrent, timezone: "UTC" },
  });
  const agent = await Agent.create({ paths, config, store });
  const gateway = new Gateway({ agent, store, config, cwd: project });
  const watch: Watch = { peakInFlight: 0, refused: 0, launchedAt: [], finishedAt: [], warnings: [] };
  const note = () => {
    if (gateway.turnsInFlight > watch.peakInFlight) watch.peakInFlight = gateway.turnsInFlight;
  };
  const watched: Pick<Gateway, "launch" | "interrupt" | "isRunning"> = {
    async launch(request) {
      try {
        const launched = await gateway.launch(request);
        watch.launchedAt.push(Date.now());
        note();
        return launched;
      } catch (error) {
        if ((error as { code?: unknown }).code === "too_many_turns") watch.refused++;
        throw error;
      }
    },
    interrupt: (sessionId, reason, status) => gateway.interrupt(sessionId, reason, status),
    isRunning: (sessionId) => gateway.isRunning(sessionId),
  };
  const engine = new CronEngine({
    store,
    host: gatewayCronHost(watched),
    maxConcurrent: Math.min(config.cron.max_concurrent, config.gateway.max_turns),
    defaultTimeoutS: config.cron.default_timeout,
    sessionOp: (title) => agent.newSessionOp({ title, source: "cron" }),
    onEvent: (event) => {
      if (event.type === "cron_run_finished") watch.finishedAt.push(Date.now());
      else if (event.type !== "cron_run_started") watch.warnings.push(event.message);
    },
    onError: (what, error) => watch.warnings.push(`cron: ${what} failed: ${(error as Error).message}`),
  });
  const jobs = new CronJobs(store, { timezone: "UTC", cwd: project });
  const sampler = setInterval(note, 2);
  return {
    sim,
    store,
    agent,
    gateway,
    engine,
    jobs,
    config,
    watch,
    start: () => engine.startOn(agent.scheduler),
    async close() {
      clearInterval(sampler);
      engine.stop();
      await engine.runner.settled(10_000);
      gateway.beginShutdown();
      await gateway.drain(10_000);
      await agent.close();
      await releaseStore(store);
      await sim.close();
    },
  };
}

/** Create jobs in waves written at once (the store group-commits them), as /api/jobs would one by one. */
export async function createJobs(
  jobs: CronJobs,
  specs: readonly { name: string; schedule: string; prompt: string }[],
  wave = 200,
): Promise<void> {
  for (let i = 0; i < specs.length; i += wave)
    await Promise.all(
      specs.slice(i, i + wave).map((s) => jobs.create(s.name, { schedule: s.schedule, prompt: s.prompt })),
    );
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
