// A stalled turn in a real gateway process, over the simulator: a provider that hangs mid-stream
// makes the turn stalled in /health and `tenax status` (exit 1) within stall_after + 5 s, named
// with its session, its turn and the command that ends it; at turn_deadline the turn is ended with
// code turn_deadline (the chat completion's error, streamed or not; a run's state and events), the
// provider request is closed and nothing of the turn runs any more. `tenax sessions stop` ends a
// turn the gateway runs.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { expectError, type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

const STALL_AFTER = 2;
const DEADLINE = 6;
const agentKeys = (deadline = DEADLINE) =>
  `tools: { exec: { mode: full } }\nagent: { stall_after: ${STALL_AFTER}, turn_deadline: ${deadline} }`;

interface Stalled {
  session_id: string;
  turn_id: string;
  phase: string;
  stop: string;
}
interface TurnsComponent {
  status: string;
  detail: string;
  next: string | null;
  running: number;
  stalled: Stalled[];
}

async function turnsOf(gw: GatewayProcess): Promise<{ overall: string; turns: TurnsComponent }> {
  const body = (await (await gw.fetch("/health")).json()) as {
    status: string;
    components: { turns: TurnsComponent };
  };
  return { overall: body.status, turns: body.components.turns };
}

/** Poll /health until a turn is stalled; how long it took. */
async function stalledIn(gw: GatewayProcess, since: number): Promise<{ ms: number; turns: TurnsComponent }> {
  for (;;) {
    const { turns } = await turnsOf(gw);
    if (turns.stalled.length > 0) return { ms: Date.now() - since, turns };
    if (Date.now() - since > (STALL_AFTER + 5) * 1000)
      throw new Error(`not stalled in time: ${turns.detail}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const completion = (gw: GatewayProcess, stream: boolean, content = "wait for it") =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", stream, messages: [{ role: "user", content }] }),
  });

describe("a stalled turn in the gateway", () => {
  it("is named in /health and tenax status within stall_after + 5 s, and ended at turn_deadline (streamed or not)", async () => {
    // A deadline with room for `tenax status` to start and look while the turn is still stalled.
    const deadline = 15;
    const { home, sim, paths } = await simProfile("", agentKeys(deadline));
    const gw = await startGateway(home);
    sim.script([
      { type: "hang", phase: "mid_stream", after_chunks: 1 },
      { type: "hang", phase: "mid_stream", after_chunks: 1 },
    ]);
    const since = Date.now();
    const answer = completion(gw, false);
    await until(() => sim.requests().length === 1);
    // A streamed one beside it, in its own session: its end is the stream's last event.
    const streamed = completion(gw, true, "and this one streamed").then((r) => r.text());
    const { ms, turns } = await stalledIn(gw, since);
    expect(ms).toBeLessThan((STALL_AFTER + 5) * 1000);
    expect(turns.status).toBe("degraded");
    const [stalled] = turns.stalled;
    expect(stalled).toMatchObject({ phase: "provider" });
    expect(turns.detail).toContain(`session ${stalled?.session_id}`);
    expect(turns.detail).toContain(`turn ${stalled?.turn_id}`);
    expect(turns.next).toContain(`tenax sessions stop ${stalled?.session_id}`);

    // tenax status says the same, from the store, with exit 1 (degraded).
    const status = await tenaxAsync(home, ["status", "--json"]);
    const report = JSON.parse(status.stdout) as { status: string; components: { turns: TurnsComponent } };
    expect(report.components.turns.stalled.map((s) => s.session_id)).toContain(stalled?.session_id);
    expect(status.status).toBe(1);

    // The deadline ends it: the client gets the error, the provider request is closed.
    const response = await answer;
    expect(response.headers.get("x-session-id")).toBe(stalled?.session_id);
    const error = await expectError(response, 504, "turn_deadline");
    expect(error.message).toContain("agent.turn_deadline");
    expect(Date.now() - since).toBeGreaterThanOrEqual(deadline * 1000);
    const last = (await streamed)
      .split("\n")
      .filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
      .at(-1);
    expect(JSON.parse(last?.slice(6) ?? "{}")).toMatchObject({ error: { code: "turn_deadline" } });
    await until(() => sim.requests().every((r) => r.ended !== "open"));
    expect(sim.requests().map((r) => r.ended)).toEqual(["client_closed", "client_closed"]);
    // The log has the stall as a warning, with the command that ends it.
    const warned = readFileSync(join(paths.logs, "gateway.log"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"type":"turn_stalled"'))
      .map((l) => JSON.parse(l) as { level: string; message: string });
    expect(warned[0]?.level).toBe("warn");
    expect(warned[0]?.message).toContain("tenax sessions stop");
    // Nothing of them runs, and health has cleared.
    const after = await turnsOf(gw);
    expect(after.turns).toMatchObject({ status: "ok", running: 0, stalled: [] });
  }, 30_000);

  it("is stalled in a tool that says nothing, and the deadline kills the command", async () => {
    const { home, sim } = await simProfile("", agentKeys());
    const gw = await startGateway(home);
    const marker = `tenax-stall-${process.pid}-${Date.now()}`;
    sim.script([
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: `sleep 120 # ${marker}` } }] },
    ]);
    const submitted = await gw.fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "sleep" }] }),
    });
    const run = (await submitted.json()) as { run_id: string; session_id: string };
    const { turns } = await stalledIn(gw, Date.now());
    expect(turns.stalled[0]).toMatchObject({ session_id: run.session_id, phase: "tool" });
    let state: { status: string; error: { code: string } | null } = { status: "running", error: null };
    const deadline = Date.now() + 20_000;
    while (state.status === "running" || state.status === "queued") {
      if (Date.now() > deadline) throw new Error("the run never ended");
      await new Promise((r) => setTimeout(r, 200));
      state = (await (await gw.fetch(`/v1/runs/${run.run_id}`)).json()) as typeof state;
    }
    expect(state).toMatchObject({ status: "failed", error: { code: "turn_deadline" } });
    const events = await (await gw.fetch(`/v1/runs/${run.run_id}/events`)).text();
    expect(events).toContain('"type":"turn_stalled"');
    expect(events).toContain('"type":"turn_deadline"');
    // The command is gone: nothing carries its marker any more.
    const left = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.includes(marker) && !l.includes("ps -eo"));
    expect(left).toEqual([]);
  }, 30_000);

  it("is ended from outside by tenax sessions stop", async () => {
    const { home, sim } = await simProfile("", agentKeys(120));
    const gw = await startGateway(home);
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const answer = completion(gw, false);
    await until(() => sim.requests().length === 1);
    const sessions = (await (await gw.fetch("/api/sessions")).json()) as { data: { id: string }[] };
    const id = sessions.data[0]?.id as string;
    const stop = await tenaxAsync(home, ["sessions", "stop", id]);
    expect(stop.stderr).toBe("");
    expect(stop.status).toBe(0);
    expect(stop.stdout).toContain(`stopped turn`);
    expect(stop.stdout).toContain(`session ${id}`);
    await expectError(await answer, 409, "stopped");
    await until(() => sim.requests()[0]?.ended !== "open");
    expect(sim.requests()[0]?.ended).toBe("client_closed");

    // Once no turn runs, stopping is a clear error; an unknown session too.
    const [again, unknown] = await Promise.all([
      tenaxAsync(home, ["sessions", "stop", id]),
      tenaxAsync(home, ["sessions", "stop", "sess_nope"]),
    ]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("has no running turn");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("no session 'sess_nope'");
  }, 30_000);
});
