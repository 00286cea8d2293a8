// What a chat completion asks of the disk, end to end: through the gateway's real chat route over
// a real socket, a real agent on a real SQLite store, and the simulator. One not streamed is
// acknowledged by its answer, so its whole turn makes one synced commit: its question (the
// session, the message, the turn's start) is committed lazily (durableWithNext) and made durable
// by the end's one sync. One streamed tells its client of the session as the turn starts, so its
// question is durable first: two synced commits. A write asks for a sync unless it is lazy, and
// the group commit syncs the WAL for any group holding one that asks (src/store/group-commit.ts);
// the turn's writes are counted as the store is asked for them, as src/agent/turn-commits.test.ts
// counts an agent's own, because the process's other writers (the provider health records) commit
// on their own timers.
import { describe, expect, it } from "vitest";
import type { WriteOp } from "../src/store/ops.js";
import { type CountedWrite, countWrites } from "./helpers/counted-writes.js";
import { type GatewayApp, startGatewayApp } from "./helpers/gateway-app.js";

/** The store's writes of sessions, messages and turns from now on. */
const turnWrites = (app: GatewayApp) =>
  countWrites(app.store, (ops: readonly WriteOp[]) =>
    ops.some((op) => op.op.startsWith("session.") || op.op.startsWith("turn.") || op.op === "message.append"),
  );

const post = (app: GatewayApp, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${app.key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const ends = (w: CountedWrite | undefined) => w?.ops.includes("turn.update") === true;

describe("a chat completion's synced commits, through the chat route", () => {
  it("not streamed: one sync for the whole turn, its question lazy and made durable by the end's", async () => {
    const app = await startGatewayApp();
    const { counts, writes, reset } = turnWrites(app);
    const answer = await post(app, { messages: [{ role: "user", content: "hello" }] });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe("echo: hello");
    const session = answer.headers.get("x-session-id");
    expect(session).toBeTruthy();
    expect(counts).toEqual({ syncs: 1, lazy: 1 });
    // The lazy one is the question (the turn's start), the synced one the turn's end.
    expect(writes[0]).toMatchObject({ synced: false });
    expect(writes[0]?.ops).toEqual(
      expect.arrayContaining(["session.create", "message.append", "turn.start"]),
    );
    expect(writes[1]?.synced).toBe(true);
    expect(ends(writes[1])).toBe(true);
    const messages = await app.store.getMessages(session ?? "");
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "echo: hello"],
    ]);
    expect((await app.store.getSession(session ?? ""))?.last_turn).toMatchObject({ status: "completed" });

    // The conversation's next turn, in its session: one sync again.
    reset();
    const next = await post(
      app,
      { messages: [{ role: "user", content: "again" }] },
      { "x-session-id": session ?? "" },
    );
    expect(next.status).toBe(200);
    await next.json();
    expect(counts).toEqual({ syncs: 1, lazy: 1 });
  });

  it("streamed: its question is durable before the client hears of the turn, then its end: two syncs", async () => {
    const app = await startGatewayApp();
    const { counts, writes } = turnWrites(app);
    const answer = await post(app, { messages: [{ role: "user", content: "hello" }], stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/text\/event-stream/);
    // The stream opened at the turn's start, whose write had asked for its sync by then.
    const asked = writes.map((w) => ({ ...w }));
    expect(asked[0]).toMatchObject({ synced: true });
    expect(asked[0]?.ops).toContain("turn.start");
    const session = answer.headers.get("x-session-id");
    expect(await answer.text()).toMatch(/"status":"completed"[\s\S]*data: \[DONE\]/);
    const messages = await app.store.getMessages(session ?? "");
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "echo: hello"],
    ]);
    expect(counts).toEqual({ syncs: 2, lazy: 0 });
    expect(ends(writes[1])).toBe(true);
  });
});
