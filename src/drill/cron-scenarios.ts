// The cron layer: a gateway killed with SIGKILL in the middle of a job's run must resume that run
// after its restart (one run record, the same turn, no second start of the occurrence), and a
// gateway that was down for 3 hours must run one catch-up for the newest missed occurrence and
// record the older ones as skipped, with the reason. Jobs are written into the scratch store
// before the gateway starts, as `tenax cron add` would.
import { CronJobs } from "../cron/jobs.js";
import { listRuns, type RunRecord, readSlot } from "../cron/records.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openReader, openStore, releaseStore } from "../store/registry.js";
import type { TurnView } from "../store/rows.js";
import { killHard, scenarioGateway, stopGateway } from "./gateway-child.js";
import { feedEvent, until } from "./gateway-client.js";
import type { Scenario } from "./runner.js";
import { scratchProfile } from "./scratch.js";

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** How far ahead of the job's creation the killed run's occurrence falls: room for a gateway to start. */
const FIRST_IN_MS = 4_000;

/** Write a job into the scratch store as if created at `createdAt`, then let go of the store. */
async function addJob(
  paths: ProfilePaths,
  name: string,
  schedule: string,
  prompt: string,
  createdAt: number,
): Promise<void> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    await new CronJobs(store, { timezone: "UTC", now: () => createdAt }).create(name, { schedule, prompt });
  } finally {
    await releaseStore(store);
  }
}

/** A job's run records (newest first) and its slot, read-only (a running gateway keeps writing). */
async function readCron(
  paths: ProfilePaths,
  job: string,
): Promise<{ runs: RunRecord[]; slot: number | null }> {
  const reader = openReader(paths);
  try {
    return { runs: await listRuns(reader, job), slot: (await readSlot(reader, job))?.slot ?? null };
  } finally {
    reader.close();
  }
}

async function readSessionTurns(paths: ProfilePaths, session: string): Promise<TurnView[]> {
  const reader = openReader(paths);
  try {
    return await reader.getTurns(session);
  } finally {
    reader.close();
  }
}

/** The job's next due time as `tenax cron list` tells it, from a store opened afresh (no gateway runs). */
async function nextDue(paths: ProfilePaths, job: string): Promise<number | null> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    return (await new CronJobs(store, { timezone: "UTC" }).get(job)).next_due_at;
  } finally {
    await releaseStore(store);
  }
}

const at = (ms: number | null | undefined) => (ms == null ? "none" : new Date(ms).toISOString());

const killedDuringRun: Scenario = {
  fault: "gateway killed (SIGKILL) during a cron run",
  expected_layer: "cron",
  async run(context) {
    const { sim, paths } = await scratchProfile(context);
    sim.script([
      {
        type: "reply",
        text: "a job's reply that streams slowly, word by word",
        chunk_size: 4,
        chunk_delay_ms: 150,
      },
      { type: "reply", text: "resumed and done" },
    ]);
    const job = "drill-every-minute";
    // Created a minute less FIRST_IN_MS ago: its first occurrence (anchor + 1 min) is that far ahead.
    const createdAt = Date.now() - MINUTE + FIRST_IN_MS;
    const occurrence = createdAt + MINUTE;
    await addJob(paths, job, "every 1m", "report on the drill's scratch folder", createdAt);

    const first = await scenarioGateway(context);
    await until(() => sim.requests().length === 1, context.signal);
    // Let part of the job's reply stream, then kill the process as a crash would.
    await new Promise((resolve) => setTimeout(resolve, 400));
    context.injected();
    await killHard(first);
    const killed = (await readCron(paths, job)).runs;
    const killedRun = killed[0];
    if (killed.length !== 1 || killedRun?.state !== "running" || killedRun.session_id === null) {
      return {
        ok: false,
        detail: `after the kill the job had ${killed.length} run(s), the newest ${killedRun?.state ?? "missing"}, not one running`,
      };
    }
    const killedTurn = (await readSessionTurns(paths, killedRun.session_id))[0];
    if (killedTurn?.status !== "running")
      return { ok: false, detail: `after the kill the run's turn was ${killedTurn?.status ?? "missing"}` };

    const second = await scenarioGateway(context);
    const resumed = await feedEvent(second, "cron_run_resumed", context.signal);
    if (resumed.layer) context.caught(resumed.layer);
    await until(async () => (await readCron(paths, job)).runs.some((r) => r.state === "ok"), context.signal);
    // Give a second start of the occurrence (which must not happen) the time to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await stopGateway(second);
    const { runs, slot } = await readCron(paths, job);
    const ofOccurrence = runs.filter((r) => r.occurrence === occurrence);
    const run = ofOccurrence[0];
    const turns = await readSessionTurns(paths, killedRun.session_id);
    // The next occurrence is a minute after this one: waiting for it to run would not fit the
    // drill's 25 s deadline per scenario, so the check is that it is due on time (the slot at this
    // occurrence, the next due time exactly one period later), not that it ran.
    const next = await nextDue(paths, job);
    const ok =
      runs.length === 1 &&
      ofOccurrence.length === 1 &&
      run?.state === "ok" &&
      run.resumed === 1 &&
      run.turn_id === killedTurn.id &&
      turns.length === 1 &&
      turns[0]?.status === "completed" &&
      sim.requests().length === 2 &&
      slot === occurrence &&
      next === occurrence + MINUTE;
    return {
      ok,
      detail: [
        `${ofOccurrence.length} run record(s) for the occurrence (${runs.length} in all), ${run?.state ?? "missing"}, resumed ${run?.resumed ?? "?"} time(s), ${run?.turn_id === killedTurn.id ? "same turn" : `turn ${run?.turn_id ?? "none"}, not ${killedTurn.id}`}`,
        `${sim.requests().length} model call(s) (the killed one and the resumed one)`,
        `next due ${at(next)}, ${next === null ? "none" : `${Math.round((next - occurrence) / 1000)} s after the occurrence`}`,
        `feed: ${resumed.type}(${resumed.layer ?? "no layer"})`,
      ].join("; "),
    };
  },
};

const missedWindow: Scenario = {
  fault: "a missed window (the gateway was down for 3 hours)",
  expected_layer: "cron",
  async run(context) {
    const { sim, paths } = await scratchProfile(context);
    const job = "drill-hourly";
    // Created 3 h 10 min ago and never run: three occurrences fell while no gateway ran, the newest
    // 10 min ago (within an hourly job's 30 min grace window), the older two beyond it.
    const createdAt = Date.now() - (3 * HOUR + 10 * MINUTE);
    const occurrences = [1, 2, 3].map((k) => createdAt + k * HOUR);
    await addJob(paths, job, "every 1h", "summarize the drill's scratch folder", createdAt);

    // The downtime ends when the gateway starts: that is when it can be noticed.
    context.injected();
    const gateway = await scenarioGateway(context);
    const missed = await feedEvent(gateway, "cron_missed", context.signal);
    if (missed.layer) context.caught(missed.layer);
    await until(
      async () => (await readCron(paths, job)).runs.some((r) => r.missed && r.state === "ok"),
      context.signal,
    );
    // Give a second run (which must not happen) the time to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await stopGateway(gateway);
    const { runs } = await readCron(paths, job);
    const caughtUp = runs.filter((r) => r.missed);
    const skipped = runs.filter((r) => r.state === "skipped");
    const skippedRight =
      skipped.length === 2 &&
      skipped.every((r) => r.count === 1 && (r.reason ?? "").length > 0) &&
      skipped
        .map((r) => r.occurrence)
        .sort((a, b) => a - b)
        .join() === occurrences.slice(0, 2).join();
    const ok =
      runs.length === 3 &&
      caughtUp.length === 1 &&
      caughtUp[0]?.state === "ok" &&
      caughtUp[0].occurrence === occurrences[2] &&
      skippedRight &&
      sim.requests().length === 1;
    return {
      ok,
      detail: [
        `${caughtUp.length} catch-up run(s) (${caughtUp.map((r) => r.state).join(", ") || "none"}) for the occurrence ${Math.round((Date.now() - (caughtUp[0]?.occurrence ?? 0)) / MINUTE)} min ago`,
        `${skipped.length} skipped: ${skipped.map((r) => r.reason ?? "no reason").join(" / ") || "none"}`,
        `${sim.requests().length} model call(s)`,
        `feed: ${missed.type}(${missed.layer ?? "no layer"})`,
      ].join("; "),
    };
  },
};

export const cronScenarios: readonly Scenario[] = [killedDuringRun, missedWindow];
