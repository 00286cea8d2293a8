// `tenax cron run NAME` and `tenax cron tick`: the cron engine in this process, on the agent
// itself. A run claimed here is claimed in the store like one the gateway claims, so a gateway
// and any number of ticks never run one occurrence twice.
import { openAgent } from "../../agent/setup.js";
import { loadConfig } from "../../config/load.js";
import { loadProfileSecrets } from "../../config/profile-secrets.js";
import { agentCronHost } from "../../cron/agent-host.js";
import { CronEngine } from "../../cron/engine.js";
import type { RunRecord } from "../../cron/records.js";
import { readRun } from "../../cron/records.js";
import type { Cli } from "../main.js";
import type { Output } from "../output.js";
import { storeSettings } from "../store-access.js";

async function withEngine<T>(cli: Cli, out: Output, body: (engine: CronEngine) => Promise<T>): Promise<T> {
  const paths = cli.profile({ create: true });
  const loaded = loadConfig(paths);
  const { config, warnings } = loaded;
  for (const w of warnings) out.warn(w);
  const opened = await openAgent(paths, config, {
    storeSettings: storeSettings(config),
    secrets: loadProfileSecrets(paths, loaded),
  });
  const engine = new CronEngine({
    store: opened.store,
    host: agentCronHost(opened.agent, process.cwd()),
    maxConcurrent: Math.min(config.cron.max_concurrent, config.gateway.max_turns),
    defaultTimeoutS: config.cron.default_timeout,
    sessionOp: (title) => opened.agent.newSessionOp({ title, source: "cron" }),
    onEvent: (event) => {
      out.line(event.message);
    },
    onError: (what, error) => out.warn(`cron: ${what} failed: ${(error as Error).message}`),
  });
  try {
    return await body(engine);
  } finally {
    await engine.runner.settled(1_000);
    await opened.close();
  }
}

function summary(run: RunRecord): string {
  const took =
    run.started_at !== null && run.ended_at !== null
      ? ` in ${((run.ended_at - run.started_at) / 1000).toFixed(1)} s`
      : "";
  const head = `${run.job}: run ${run.run_key} ${run.state}${took}`;
  if (run.state === "ok")
    return run.silent ? `${head} ([SILENT]: recorded, not delivered)` : `${head}\n${run.reply ?? ""}`;
  return `${head}: ${run.error ?? "no reason given"}`;
}

export async function runJobCommand(cli: Cli, out: Output, name: string): Promise<number> {
  return withEngine(cli, out, async (engine) => {
    const claimed = await engine.runNow(name);
    await engine.runner.idle();
    const run = readRun(engine.store, claimed.run_key) ?? claimed;
    if (out.json) out.document({ run });
    else out.line(summary(run));
    return run.state === "ok" ? 0 : 1;
  });
}

export async function tickCommand(cli: Cli, out: Output): Promise<number> {
  return withEngine(cli, out, async (engine) => {
    const recovered = await engine.runner.recover({ settleInterrupted: false });
    const report = await engine.tick();
    await engine.runner.idle();
    const runs = [...report.claimed, ...recovered.taken].map((r) => readRun(engine.store, r.run_key) ?? r);
    if (out.json) {
      out.document({
        runs,
        skipped: report.skipped,
        conflicts: report.conflicts,
        waiting_for_gateway: recovered.waiting,
      });
    } else {
      if (runs.length === 0 && report.skipped.length === 0) out.line("nothing was due");
      for (const run of runs) out.line(summary(run));
      if (report.skipped.length > 0)
        out.line(
          `${report.skipped.length} record(s) of skipped runs written (tenax cron runs NAME shows them)`,
        );
      if (recovered.waiting > 0)
        out.line(
          `${recovered.waiting} run(s) of a stopped gateway wait for the gateway to resume them (tenax gateway start)`,
        );
    }
    return runs.some((r) => r.state !== "ok") ? 1 : 0;
  });
}
