// The runs API across two gateways of one profile on one PostgreSQL database (real gateway
// processes, a real cluster, one simulator): an Idempotency-Key sent to both at once starts one run
// and one model call; a run one gateway runs is followed to its end from the other and stopped
// from the other; an approval its turn waits for is decided on the other.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { startGateway, until } from "./helpers/gateway.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { type RunView, readEvents, started, state, submit, user } from "./helpers/runs-client.js";
import { sharedProfiles } from "./helpers/shared-gateways.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();

const slowReply = (text: string, delay = 100) => ({
  type: "reply" as const,
  text,
  chunk_size: 3,
  chunk_delay_ms: delay,
});

describe("runs across gateways on one PostgreSQL", () => {
  it("an Idempotency-Key sent to both gateways at once gives one run and one model call", async () => {
    const { sim, homes } = await sharedProfiles(2, await cluster().createDatabase());
    const [a, b] = await Promise.all(homes.map((home) => startGateway(home)));
    if (a === undefined || b === undefined) throw new Error("two gateways");
    sim.script([slowReply("only once across gateways")]);
    const key = { "idempotency-key": "order-shared-1" };
    const answers = await Promise.all([a, b, a, b].map((gw) => submit(gw, user("pay"), key)));
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as RunView[];
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 202]);
    expect(new Set(bodies.map((x) => x.run_id)).size).toBe(1);
    const runId = bodies[0]?.run_id ?? "";
    // Followed to its end from either gateway, whichever runs it.
    const fromA = await readEvents(a, runId);
    const fromB = await readEvents(b, runId);
    expect(fromA.ended && fromB.ended).toBe(true);
    expect(fromB.events).toEqual(fromA.events);
    expect(fromB.events.at(-1)?.data).toMatchObject({ type: "run.finished", status: "completed" });
    expect(sim.requests()).toHaveLength(1);
  }, 120_000);

  it("a run on one gateway is followed live and stopped from the other", async () => {
    const { sim, homes } = await sharedProfiles(2, await cluster().createDatabase());
    const [a, b] = await Promise.all(homes.map((home) => startGateway(home)));
    if (a === undefined || b === undefined) throw new Error("two gateways");
    sim.script([slowReply("one two three four five six seven eight nine ten ".repeat(8), 150)]);
    const run = await started(await submit(a, user("count slowly")));
    // The other gateway's follower sees the run's events as the first gateway commits them.
    const following = readEvents(b, run.run_id);
    const early = await readEvents(b, run.run_id, { stopAfter: 3 });
    expect(early.events.map((e) => e.event)).toContain("run.started");
    const stop = await b.fetch(`/v1/runs/${run.run_id}/stop`, { method: "POST" });
    expect(stop.status).toBe(202);
    expect(await stop.json()).toMatchObject({ run_id: run.run_id, stop_requested: true });
    const { events, ended } = await following;
    expect(ended).toBe(true);
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", status: "interrupted" });
    expect(events.map((e) => e.event)).toContain("turn_stop_requested");
    // Both gateways answer the same ended state.
    expect((await state(a, run.run_id)).status).toBe("interrupted");
    expect((await state(b, run.run_id)).status).toBe("interrupted");
    const twice = await b.fetch(`/v1/runs/${run.run_id}/stop`, { method: "POST" });
    expect(twice.status).toBe(200);
    expect(await twice.json()).toMatchObject({ stop_requested: false });
  }, 120_000);

  it("an approval the run's turn waits for on one gateway is decided on the other", async () => {
    const dir = tempDir("tenax-shared-approval-");
    const file = join(dir, "remove-me.txt");
    writeFileSync(file, "x\n");
    const { sim, homes } = await sharedProfiles(
      2,
      await cluster().createDatabase(),
      "",
      `tools: { exec: { mode: ask }, files: { roots: ["${dir}"] } }`,
    );
    const [a, b] = await Promise.all(homes.map((home) => startGateway(home)));
    if (a === undefined || b === undefined) throw new Error("two gateways");
    sim.script([
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: `rm -rf ${dir}/*` } }] },
      { type: "reply", text: "removed" },
    ]);
    const run = await started(await submit(a, user("clean up")));
    let pending: { approval_id: string; status: string } | undefined;
    await until(async () => {
      const listed = (await (await b.fetch(`/v1/runs/${run.run_id}/approvals`)).json()) as {
        data: { approval_id: string; status: string }[];
      };
      pending = listed.data.find((x) => x.status === "pending");
      return pending !== undefined;
    }, 20_000);
    const decided = await b.fetch(`/v1/runs/${run.run_id}/approvals/${pending?.approval_id}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(200);
    const { events } = await readEvents(b, run.run_id);
    expect(events.at(-1)?.data).toMatchObject({
      type: "run.finished",
      status: "completed",
      reply: "removed",
    });
    expect(existsSync(file)).toBe(false);
    // Decided once: the gateway that ran the turn cannot decide it again.
    const again = await a.fetch(`/v1/runs/${run.run_id}/approvals/${pending?.approval_id}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(again.status).toBe(409);
  }, 120_000);

  it("a run whose gateway is killed is taken over by the other and followed to its end there", async () => {
    const { sim, homes } = await sharedProfiles(2, await cluster().createDatabase());
    const [a, b] = await Promise.all(homes.map((home) => startGateway(home)));
    if (a === undefined || b === undefined) throw new Error("two gateways");
    sim.script([slowReply("a long answer the first gateway never finishes ".repeat(10), 200)]);
    const run = await started(await submit(a, user("take me over")));
    const early = await readEvents(b, run.run_id, { stopAfter: 4 });
    expect(early.events.map((e) => e.event)).toContain("turn_started");
    const killedAt = Date.now();
    a.child.kill("SIGKILL");
    const { events, ended } = await readEvents(b, run.run_id);
    const tookMs = Date.now() - killedAt;
    console.log(`takeover: the run finished on the other gateway ${tookMs} ms after kill -9`);
    expect(ended).toBe(true);
    expect(events.map((e) => e.event)).toContain("run.resumed");
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", status: "completed" });
    expect((await state(b, run.run_id)).reply).toMatch(/^echo: take me over/);
    expect(tookMs).toBeLessThan(20_000);
  }, 120_000);
});
