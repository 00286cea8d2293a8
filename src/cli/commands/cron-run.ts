// `tenax cron run NAME` and `tenax cron tick`: the cron engine in this process, on the agent
// itself. A run claimed here is claimed in the store like one the gateway claims, so a gateway
// and any number of ticks never run one occurrence twice.

import { join } from "node:path";
import type { AuditInput } from "../../agent/audit-trail.js";
import type { CronEvent } from "../../agent/events.js";
import { resumeInterrupted } from "../../agent/resume.js";
import { openAgent } from "../../agent/setup.js";
import { loadConfig } from "../../config/load.js";
import { loadProfileSecrets } from "../../config/profile-secrets.js";
import { agentHosts } from "../../cron/agent-host.js";
import { cronChannel } from "../../cron/delivery.js";
import { CronEngine } from "../../cron/engine.js";
import { finishOps } from "../../cron/finish.js";
import type { RunRecord } from "../../cron/records.js";
import { readRun } from "../../cron/records.js";
import { Outbox } from "../../outbox/outbox.js";
import { readGatewayPid } from "../../profile/gateway-pid.js";
import type { Cli } from "../main.js";
import type { Output } from "../output.js";
import { storeSettings } from "../store-access.js";
import { startCommandTracing } from "../telemetry.js";

interface Opened {
  engine: CronEngine;
  /** Whether the profile's gateway runs (it resumes and settles what a stopped process left). */
  gatewayUp(): boolean;
  /** Resume the runs a stopped tick left running, when no gateway runs to do it; how many. */
  resumeOrphans(): Promise<number>;
}

async function withEngine<T>(cli: Cli, out: Output, body: (opened: Opened) => Promise<T>): Promise<T> {
  const paths = cli.profile({ create: true });
  const loaded = loadConfig(paths);
  const { config, warnings } = loaded;
  for (const w of warnings) out.warn(w);
  const tracing = await startCommandTracing(config, (line) => out.warn(line));
  const opened = await openAgent(paths, config, {
    storeSettings: storeSettings(config),
    secrets: loadProfileSecrets(paths, loaded),
    audit: { source: "cron", onFailure: (message) => out.warn(message) },
    // A job run here gets the tools it would get in the gateway.
    mcp: true,
  }).catch(async (error: unknown) => {
    await tracing?.shutdown();
    throw error;
  });
  // The cron engine's events and the resumed turns' go to the trail as the gateway's would.
  const audit = (input: AuditInput) => opened.trail?.record(input);
  const hosts = agentHosts(opened.agent, process.cwd());
  const outbox = new Outbox({ store: opened.store, owners: opened.owners }).add(
    cronChannel({
      outputDir: join(paths.cron, "output"),
      onEvent: (event) => {
        audit(cronFeed(event));
        if (event.type === "cron_delivered") out.line(event.message);
        else out.warn(event.message);
      },
    }),
  );
  const engine = new CronEngine({
    store: opened.store,
    host: hosts.cron,
    owners: opened.owners,
    maxConcurrent: Math.min(config.cron.max_concurrent, config.gateway.max_turns),
    defaultTimeoutS: config.cron.default_timeout,
    sessionOp: (title) => opened.agent.newSessionOp({ title, source: "cron" }),
    onEvent: (event) => {
      audit(cronFeed(event));
      out.line(event.message);
    },
    finishOps: finishOps(opened.store),
    onError: (what, error) => out.warn(`cron: ${what} failed: ${(error as Error).message}`),
    // For the race tests only: every tick plans from the same slot before any of them writes.
    claimDelayMs: Number(process.env.TENAX_CRON_CLAIM_DELAY_MS ?? 0) || 0,
  });
  const gatewayUp = () => readGatewayPid(paths.pid).running;
  const resumeOrphans = async (): Promise<number> => {
    if (gatewayUp()) return 0;
    const reaped = await engine.runner.orphanedTurns();
    if (reaped.length === 0) return 0;
    const report = await resumeInterrupted({
      agent: opened.agent,
      reaped,
      host: hosts.resume,
      autoResume: config.gateway.auto_resume,
      cwd: process.cwd(),
      watcherFor: async (turnId, sessionId) => await engine.runner.watcherFor(turnId, sessionId),
      turnOptionsFor: (_turnId, sessionId) => engine.runner.turnOptionsFor(sessionId),
      onEvent: ({ type, layer, session_id, message, ...data }) =>
        audit({ type, layer, session_id, message, data }),
    });
    for (const turn of report.skipped) out.warn(`cron: turn ${turn.turn_id} is not resumed: ${turn.reason}`);
    return report.resumed.length;
  };
  try {
    return await body({ engine, resumeOrphans, gatewayUp });
  } finally {
    await engine.runner.settled(1_000);
    // What is due in the outbox goes now (this run's result, and earlier ones waiting to retry).
    await outbox.kick();
    outbox.stop();
    await opened.close();
    await tracing?.shutdown();
  }
}

function cronFeed({ type, layer, message, ...data }: CronEvent): AuditInput {
  return { type, layer, message, data };
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
  return withEngine(cli, out, async ({ engine }) => {
    const claimed = await engine.runNow(name);
    await engine.runner.idle();
    const run = (await readRun(engine.store, claimed.run_key)) ?? claimed;
    if (out.json) out.document({ run });
    else out.line(summary(run));
    return run.state === "ok" ? 0 : 1;
  });
}

export async function tickCommand(cli: Cli, out: Output): Promise<number> {
  return withEngine(cli, out, async ({ engine, resumeOrphans, gatewayUp }) => {
    const resumed = await resumeOrphans();
    if (resumed > 0) out.line(`${resumed} run(s) a stopped process left running were resumed`);
    // With no gateway to resume them, what this tick could not resume ends now as interrupted.
    const recovered = await engine.runner.recover({ settleInterrupted: !gatewayUp() });
    const report = await engine.tick();
    await engine.runner.idle();
    await engine.runner.settled(60_000);
    const runs = await Promise.all(
      [...report.claimed, ...recovered.taken].map(async (r) => (await readRun(engine.store, r.run_key)) ?? r),
    );
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
