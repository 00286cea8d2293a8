// `tenax store copy`'s engine: every session, message, turn, record (tombstones too) and response of
// a SQLite store arrives in the target through the port, the counts are read back, the source is
// never changed, and a target that already holds data is refused. Here the target is a second
// SQLite store; test/store-engine-postgres.test.ts copies into PostgreSQL.
import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { copyStore } from "./copy.js";
import { openStore, releaseStore } from "./registry.js";

async function filledSource() {
  const paths = tempProfile();
  const deps = fakeDeps();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
  const a = await store.createSession({ title: "deploy notes", source: "gateway", model: "m1" });
  const turn = await store.startTurn(a, 60_000, "pid:1", { role: "user", content: "how do we deploy?" });
  await store.appendMessage({ session_id: a, role: "assistant", content: "with git push", turn_id: turn });
  await store.updateTurn({ id: turn, status: "completed", ended_at: deps.clock.now() + 5 });
  await store.write([
    { op: "session.update", id: a, conversation_hash: "h-abc", updated_at: deps.clock.now() + 9 },
  ]);
  deps.advance(100);
  const b = await store.createSession({ source: "cli", metadata: { project: "x" } });
  await store.appendMessages([
    { session_id: b, role: "user", content: [{ type: "text", text: "look at this" }] },
    {
      session_id: b,
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "exec", arguments: "{}" } }],
    },
    { session_id: b, role: "tool", content: "ok", tool_call_id: "c1", name: "exec" },
  ]);
  const failed = await store.startTurn(b, 60_000, "pid:2");
  await store.updateTurn({ id: failed, status: "failed", error: "provider down", interrupt_count: 1 });
  await store.putRecord("job", "nightly", { schedule: "0 3 * * *" });
  await store.putRecord("memory", "gone", { text: "x" });
  deps.advance(5);
  await store.putRecord("memory", "gone", null);
  await store.putRecord("approval", "ap1", { state: "pending" }, { sessionId: b });
  await store.putResponse({
    id: "resp_1",
    session_id: a,
    model: "m1",
    status: "completed",
    previous_response_id: null,
    input: "[]",
    output: '[{"type":"message","id":"msg_1"}]',
    response: "{}",
    created_at: deps.clock.now(),
  });
  await releaseStore(store);
  return { paths, a, b };
}

describe("copying a store", () => {
  it("carries every row into an empty target, reads the counts back and leaves the source as it was", async () => {
    const { paths, a, b } = await filledSource();
    const before = statSync(paths.state).mtimeMs;
    const source = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const targetPaths = tempProfile();
    const target = await openStore(targetPaths, { integrityCheckTimeoutMs: 0 });
    const progress: string[] = [];
    const counts = await copyStore({ path: paths.state, profile: paths.name }, target, (p) =>
      progress.push(`${p.table} ${p.done}/${p.total}`),
    );
    expect(counts).toEqual({ sessions: 2, messages: 5, turns: 2, records: 3, responses: 1 });
    expect(progress).toEqual(["sessions 2/2", "records 3/3", "responses 1/1"]);

    for (const id of [a, b]) {
      const strip = <T extends { id?: unknown }>(rows: T[]) => rows.map(({ id: _id, ...rest }) => rest);
      expect(await target.getSession(id)).toEqual(await source.getSession(id));
      expect(strip(await target.getMessages(id))).toEqual(strip(await source.getMessages(id)));
      expect(await target.getTurns(id)).toEqual(await source.getTurns(id));
    }
    expect(await target.findConversation("h-abc")).toBe(a);
    expect(await target.listRecords("job")).toEqual(await source.listRecords("job"));
    expect(await target.listRecords("approval", { sessionId: b })).toHaveLength(1);
    expect(await target.getRecord("memory", "gone")).toBeNull();
    // The tombstone came along: an older write replayed later cannot bring the note back.
    await target.write([
      { op: "record.put", kind: "memory", key: "gone", session_id: null, value: '"old"', updated_at: 1 },
    ]);
    expect(await target.getRecord("memory", "gone")).toBeNull();
    expect(await target.getResponse("resp_1")).toEqual(await source.getResponse("resp_1"));
    expect(statSync(paths.state).mtimeMs).toBe(before);
    await releaseStore(source);
    await releaseStore(target);
  });

  it("refuses a target that already holds sessions, and writes nothing to it", async () => {
    const { paths } = await filledSource();
    const target = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
    const existing = await target.createSession({ title: "someone else's" });
    await expect(copyStore({ path: paths.state, profile: paths.name }, target)).rejects.toMatchObject({
      code: "store_copy_target_not_empty",
      message: expect.stringMatching(/already holds Tenax data \(1 sessions/),
    });
    expect((await target.listSessions()).map((s) => s.id)).toEqual([existing]);
    await releaseStore(target);
  });
});
