// Cron with real processes: three `tenax cron tick` at one due moment, then a gateway and three
// ticks together, run each occurrence once (the simulator saw one turn per occurrence); a gateway
// killed with SIGKILL in the middle of a job's run resumes that run after its restart, as the same
// run and turn, and never starts the occurrence again.
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { addJob, runsOf } from "./helpers/cron.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

const turnsFor = (requests: { body: unknown }[], prompt: string) =>
  requests.filter((r) => JSON.stringify(r.body).includes(prompt)).length;

const sleepUntil = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));

describe("cron across processes", () => {
  it("three ticks at the same due moment, then a gateway and three ticks, run each occurrence once", async () => {
    const { sim, paths, home } = await simProfile();
    const due = await addJob(paths, "race", "tick-race-one", 1_500);
    await sleepUntil(due + 50);
    // Each tick waits 1.5 s between reading the slot and writing its claim, so all three plan the
    // same claim before any commits: the store must refuse two of them.
    const racing = { env: { TENAX_CRON_CLAIM_DELAY_MS: "1500" } };
    const ticks = await Promise.all(
      [1, 2, 3].map(() => tenaxAsync(home, ["cron", "tick", "--json"], racing)),
    );
    for (const t of ticks) expect(t.stderr).not.toMatch(/unexpected failure/);
    const told = ticks.map((t) => JSON.parse(t.stdout) as { runs: unknown[]; conflicts: number });
    expect(told.reduce((n, t) => n + t.runs.length, 0)).toBe(1);
    // The two that lost saw the conflict: they did plan the same claim.
    expect(told.reduce((n, t) => n + t.conflicts, 0)).toBe(2);
    expect(turnsFor(sim.requests(), "tick-race-one")).toBe(1);
    expect((await runsOf(paths, "race")).map((r) => [r.occurrence, r.state])).toEqual([[due, "ok"]]);

    // With a gateway up, its engine and three ticks race for the next job's first occurrence.
    const gateway = await startGateway(home);
    const next = await addJob(paths, "race-two", "tick-race-two", 4_000);
    // A tick takes about a second to start: spawned a little before the due moment, they tick at it.
    await sleepUntil(next - 700);
    const more = await Promise.all([1, 2, 3].map(() => tenaxAsync(home, ["cron", "tick", "--json"], racing)));
    for (const t of more) expect(t.status, t.stderr).toBeLessThan(2);
    await until(async () => (await runsOf(paths, "race-two")).some((r) => r.state === "ok"), 20_000);
    // Room for a second run, which must not come.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await runsOf(paths, "race-two")).map((r) => [r.occurrence, r.state])).toEqual([[next, "ok"]]);
    expect(turnsFor(sim.requests(), "tick-race-two")).toBe(1);
    gateway.child.kill("SIGTERM");
    await gateway.exited;
  }, 60_000);

  it("a gateway killed with SIGKILL mid-run resumes that run after its restart: one run record, one start", async () => {
    const { sim, paths, home } = await simProfile();
    sim.script([
      { type: "reply", text: "a slow reply that streams word by word", chunk_size: 4, chunk_delay_ms: 150 },
      { type: "reply", text: "resumed and done" },
    ]);
    const first = await startGateway(home);
    const due = await addJob(paths, "nightly", "crash-run-prompt", 2_000);
    await until(() => sim.requests().length === 1, 20_000);
    await new Promise((r) => setTimeout(r, 400));
    first.child.kill("SIGKILL");
    await first.exited;
    const [killed] = await runsOf(paths, "nightly");
    expect(killed?.state).toBe("running");
    expect(killed?.turn_id ?? killed?.session_id).toBeTruthy();

    const second = await startGateway(home);
    await until(async () => (await runsOf(paths, "nightly")).some((r) => r.state === "ok"), 20_000);
    await new Promise((r) => setTimeout(r, 500));
    const runs = await runsOf(paths, "nightly");
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect([run?.occurrence, run?.state, run?.resumed, run?.session_id]).toEqual([
      due,
      "ok",
      1,
      killed?.session_id,
    ]);
    expect(run?.reply).toContain("resumed and done");
    // The killed call and the resumed one: the occurrence was never started again.
    expect(sim.requests()).toHaveLength(2);
    expect(second.stdout()).toMatch(/nightly: run .* resumed/);
    second.child.kill("SIGTERM");
    await second.exited;
  }, 60_000);
});
