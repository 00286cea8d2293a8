// A busy session queues instead of refusing, over a real `tenax gateway run` and a simulator:
// messages sent at once are answered one after another, each seeing the reply before it; arrival
// order is kept with a hang-up in the middle (that client's message never reaches the model); the
// bound answers 429 with Retry-After; shutdown answers the waiting ones 503 at once; a queued run
// shows as queued; a queued turn takes its session's place in gateway.max_turns (no deadlock).
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { expectError, type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

type Message = { role: string; content: string | null };

const chat = (gw: GatewayProcess, content: string, sessionId?: string, signal?: AbortSignal) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...(sessionId ? { "x-session-id": sessionId } : {}) },
    body: JSON.stringify({ messages: [{ role: "user", content }] }),
    ...(signal ? { signal } : {}),
  });

async function replyOf(response: Response): Promise<string> {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]?.message.content ?? "";
}

async function sessionView(gw: GatewayProcess, id: string) {
  return (await (await gw.fetch(`/api/sessions/${id}`)).json()) as {
    running: boolean;
    queued: number;
    messages: Message[];
  };
}

const waitQueued = (gw: GatewayProcess, id: string, n: number) =>
  expect.poll(async () => (await sessionView(gw, id)).queued, { timeout: 15_000, interval: 20 }).toBe(n);

/** The user and assistant texts the model was sent in request `index`. */
function seen(sim: { requests(): { body: unknown }[] }, index: number): string[] {
  const messages = ((sim.requests()[index]?.body as { messages?: Message[] })?.messages ?? []).filter(
    (m) => m.role === "user" || m.role === "assistant",
  );
  return messages.map((m) => `${m.role}: ${m.content}`);
}

/** A session with one answered turn, and its id. */
async function session(gw: GatewayProcess): Promise<string> {
  const first = await chat(gw, "hi");
  expect(await replyOf(first)).toBe("echo: hi");
  return first.headers.get("x-session-id") ?? "";
}

// A reply that takes about 2 s (2 chunks, 1 s apart): long enough to queue behind it.
const slow = { type: "reply", text: "slow reply", chunk_size: 5, chunk_delay_ms: 1000 } as const;

describe("a busy session queues", () => {
  it("three messages sent at once are answered one after another, each seeing the reply before it", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const id = await session(gw);
    sim.script([slow]);
    const answers = Promise.all(["one", "two", "three"].map((text) => chat(gw, text, id)));
    await waitQueued(gw, id, 2);
    const replies = await Promise.all((await answers).map(replyOf));
    // Whatever the arrival order, the turns ran one at a time: the model's k-th request holds
    // every earlier question with its answer, and the transcript alternates question and answer.
    const order = sim
      .requests()
      .slice(1)
      .map((r) => {
        const users = ((r.body as { messages: Message[] }).messages ?? []).filter((m) => m.role === "user");
        return users.at(-1)?.content ?? "";
      });
    expect([...order].sort()).toEqual(["one", "three", "two"]);
    const stored = (await sessionView(gw, id)).messages.filter((m) => m.role !== "tool");
    expect(stored.map((m) => m.content)).toEqual([
      "hi",
      "echo: hi",
      ...order.flatMap((q, k) => [q, k === 0 ? "slow reply" : `echo: ${q}`]),
    ]);
    for (let k = 1; k < order.length; k++)
      expect(seen(sim, k + 1).slice(-3)).toEqual([
        `user: ${order[k - 1]}`,
        `assistant: ${k === 1 ? "slow reply" : `echo: ${order[k - 1]}`}`,
        `user: ${order[k]}`,
      ]);
    expect(replies.filter((r) => r === "slow reply")).toHaveLength(1);
  });

  it("keeps arrival order with a hang-up in the middle; the hung-up message is never run", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const id = await session(gw);
    sim.script([slow]);
    const a = chat(gw, "first", id);
    await until(() => sim.requests().length === 2);
    const b = chat(gw, "second", id);
    await waitQueued(gw, id, 1);
    const hangup = new AbortController();
    const gone = chat(gw, "never asked", id, hangup.signal).catch((e: unknown) => e);
    await waitQueued(gw, id, 2);
    const c = chat(gw, "third", id);
    await waitQueued(gw, id, 3);
    hangup.abort();
    expect(await gone).toBeInstanceOf(Error);
    // Its place is freed at once, while the first turn still runs.
    await waitQueued(gw, id, 2);
    expect((await sessionView(gw, id)).running).toBe(true);
    expect(await replyOf(await a)).toBe("slow reply");
    expect(await replyOf(await b)).toBe("echo: second");
    expect(await replyOf(await c)).toBe("echo: third");
    expect(sim.requests()).toHaveLength(4);
    expect(seen(sim, 2).slice(-3)).toEqual(["user: first", "assistant: slow reply", "user: second"]);
    expect(seen(sim, 3).slice(-3)).toEqual(["user: second", "assistant: echo: second", "user: third"]);
    expect(JSON.stringify(sim.requests())).not.toContain("never asked");
    const stored = (await sessionView(gw, id)).messages.map((m) => m.content);
    expect(stored).not.toContain("never asked");
    expect(stored.filter((c) => c === "first" || c === "second" || c === "third")).toEqual([
      "first",
      "second",
      "third",
    ]);
  });

  it("past gateway.session_queue a message gets 429 with Retry-After; at shutdown the waiting ones get 503 at once", async () => {
    const { home, sim } = await simProfile("session_queue: 1, drain_timeout: 0.5");
    const gw = await startGateway(home);
    const id = await session(gw);
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const hung = chat(gw, "wait", id);
    await until(() => sim.requests().length === 2);
    const waiting = chat(gw, "queued", id);
    await waitQueued(gw, id, 1);
    const full = await chat(gw, "one too many", id);
    expect(full.headers.get("retry-after")).toBe("1");
    const error = await expectError(full, 429, "session_queue_full");
    expect(error.message).toContain("gateway.session_queue");
    gw.child.kill("SIGTERM");
    // Answered at once, not after the drain: the hung turn is still running when it comes.
    const refused = await waiting;
    expect(sim.requests()[1]?.ended).toBe("open");
    await expectError(refused, 503, "shutting_down");
    expect(await gw.exited).toBe(0);
    expect(await (await hung).text()).toContain('"status":"interrupted"');
    expect(JSON.stringify(sim.requests())).not.toContain("queued");
  });

  it("a queued turn takes its session's place in gateway.max_turns: others get 429, it never deadlocks", async () => {
    const { home, sim } = await simProfile("max_turns: 1");
    const gw = await startGateway(home);
    const id = await session(gw);
    sim.script([slow]);
    const a = chat(gw, "first", id);
    await until(() => sim.requests().length === 2);
    const b = chat(gw, "second", id);
    await waitQueued(gw, id, 1);
    // The one slot is the running turn's; a queued turn holds none, so nothing else fits.
    await expectError(await chat(gw, "another conversation"), 429, "too_many_turns");
    expect(await replyOf(await a)).toBe("slow reply");
    expect(await replyOf(await b)).toBe("echo: second");
    expect(await replyOf(await chat(gw, "now there is room"))).toBe("echo: now there is room");
  });

  it("a run for a busy session is queued (GET /v1/runs/ID), then runs; a queued run can be stopped", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const id = await session(gw);
    sim.script([slow]);
    const a = chat(gw, "first", id);
    await until(() => sim.requests().length === 2);
    const submit = (content: string) =>
      gw.fetch("/v1/runs", {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": id },
        body: JSON.stringify({ messages: [{ role: "user", content }] }),
      });
    const run = (await (await submit("as a run")).json()) as { run_id: string; status: string };
    const stopped = (await (await submit("stopped in the queue")).json()) as { run_id: string };
    expect(run.status).toBe("queued");
    const state = async (runId: string) =>
      (await (await gw.fetch(`/v1/runs/${runId}`)).json()) as {
        status: string;
        reply: string;
        error: unknown;
      };
    expect((await state(run.run_id)).status).toBe("queued");
    expect((await (await gw.fetch(`/v1/runs/${stopped.run_id}/stop`, { method: "POST" })).status) < 300).toBe(
      true,
    );
    await expect
      .poll(async () => (await state(stopped.run_id)).status, { timeout: 10_000 })
      .toBe("interrupted");
    expect(await replyOf(await a)).toBe("slow reply");
    await expect.poll(async () => (await state(run.run_id)).status, { timeout: 15_000 }).toBe("completed");
    expect((await state(run.run_id)).reply).toBe("echo: as a run");
    expect(JSON.stringify(sim.requests())).not.toContain("stopped in the queue");
  });
});
