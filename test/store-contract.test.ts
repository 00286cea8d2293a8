// The store port's contract (src/store/port.ts), run against both engines: SQLite (the embedded
// default) and PostgreSQL (a private cluster started for this file, a new database per test).
// What one engine promises the other must keep; the PostgreSQL-only part covers what only a
// server shared by processes can show: concurrent writers, concurrent openings, an outage.
import { describe, expect, it } from "vitest";
import { restartTurn } from "../src/agent/turn-resume.js";
import { Redactor } from "../src/core/redact.js";
import { FIRST_EPOCH } from "../src/store/lease-fence.js";
import type { MessageAppendOp, WriteOp } from "../src/store/ops.js";
import type { StorePort } from "../src/store/port.js";
import type { SpoolRecord } from "../src/store/spool.js";
import type { StoreEvent } from "../src/store/store-types.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { type Engine, postgresEngine, sqliteEngine } from "./helpers/store-engines.js";
import { rejected } from "./helpers/temp-home.js";
import { postgresOnly } from "./store-contract-postgres.js";

const cluster = usePostgresCluster();
const engines: Engine[] = [sqliteEngine, postgresEngine(cluster)];

const session = (id: string, createdAt: number, title: string | null = null): WriteOp => ({
  op: "session.create",
  id,
  title,
  source: "cli",
  model: null,
  parent_session_id: null,
  created_at: createdAt,
  metadata: null,
});

const message = (sessionId: string, uid: string, content: string, createdAt = 1_000): WriteOp => ({
  op: "message.append",
  uid,
  session_id: sessionId,
  role: "user",
  content,
  content_kind: "text",
  tool_calls: null,
  tool_call_id: null,
  name: null,
  turn_id: null,
  created_at: createdAt,
});

const put = (key: string, value: unknown, at: number, sessionId: string | null = null): WriteOp => ({
  op: "record.put",
  kind: "note",
  key,
  session_id: sessionId,
  value: value === null ? null : JSON.stringify(value),
  updated_at: at,
});

const claim = (key: string, value: unknown, expect: string | null, at = 5_000): WriteOp => ({
  op: "record.claim",
  kind: "lease",
  key,
  session_id: null,
  value: JSON.stringify(value),
  expect,
  updated_at: at,
});

const response = (id: string, sessionId: string | null, createdAt: number, itemId = `${id}_item`) => ({
  id,
  session_id: sessionId,
  model: "m",
  status: "completed",
  previous_response_id: null,
  input: JSON.stringify([{ type: "message", content: "hi" }]),
  output: JSON.stringify([{ id: itemId, type: "message", content: "hello" }]),
  response: JSON.stringify({ object: "response" }),
  created_at: createdAt,
});

describe.each(engines)("store contract: $name", (engine) => {
  const open = async (): Promise<StorePort> => (await engine.open()).store;

  it("creates, gets, lists sessions and resolves an id from a unique prefix", async () => {
    const s = await open();
    await s.write([
      session("s_abc1", 1_000, "first"),
      session("s_abc2", 2_000),
      session("s_xyz", 3_000, "third"),
    ]);
    const first = await s.getSession("s_abc1");
    expect(first).toMatchObject({
      id: "s_abc1",
      title: "first",
      source: "cli",
      message_count: 0,
      last_turn: null,
    });
    expect(first?.created_at).toBe(1_000);
    expect(await s.getSession("s_none")).toBeNull();
    expect((await s.listSessions()).map((v) => v.id)).toEqual(["s_xyz", "s_abc2", "s_abc1"]);
    expect((await s.listSessions({ limit: 1, offset: 1 })).map((v) => v.id)).toEqual(["s_abc2"]);
    expect(await s.resolveSessionId("s_abc1")).toBe("s_abc1");
    expect(await s.resolveSessionId("s_x")).toBe("s_xyz");
    const ambiguous = await rejected(() => s.resolveSessionId("s_abc"));
    expect(ambiguous.code).toBe("usage");
    expect(ambiguous.message).toContain("matches several sessions: s_abc1, s_abc2");
    const missing = await rejected(() => s.resolveSessionId("s_q"));
    expect(missing.code).toBe("usage");
    expect(missing.message).toContain(`no session 's_q' in ${s.where}`);
    const id = await s.createSession({ title: "made", metadata: { a: 1 } });
    expect(await s.getSession(id)).toMatchObject({ title: "made", metadata: { a: 1 } });
  });

  it("numbers messages 1..n in order and returns the original for a duplicate uid", async () => {
    const s = await open();
    const id = await s.createSession();
    const batch = await s.appendMessages(
      [1, 2, 3, 4, 5].map((n) => ({ session_id: id, role: "user", content: `m${n}`, uid: `u${n}` })),
    );
    expect(batch.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    for (const n of [6, 7, 8]) await s.appendMessage({ session_id: id, role: "assistant", content: `m${n}` });
    const messages = await s.getMessages(id);
    expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(messages.map((m) => m.content)).toEqual(["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"]);
    expect(typeof messages[0]?.id).toBe("number");
    expect(typeof messages[0]?.created_at).toBe("number");
    const again = await s.appendMessage({ session_id: id, role: "user", content: "m3", uid: "u3" });
    expect(again).toEqual({ id: batch[2]?.id, seq: 3, duplicate: true });
    expect((await s.getSession(id))?.message_count).toBe(8);
    const parts = await s.appendMessage({
      session_id: id,
      role: "user",
      content: [{ type: "text", text: "p" }],
    });
    expect((await s.getMessages(id)).at(-1)).toMatchObject({ seq: parts.seq, content_kind: "parts" });
  });

  it("takes a message holding a NUL character (a tool's binary output)", async () => {
    const s = await open();
    const id = await s.createSession();
    await s.appendMessage({ session_id: id, role: "tool", content: "before\u0000after", tool_call_id: "c1" });
    const [stored] = await s.getMessages(id);
    expect(stored?.content).toMatch(/^before.after$/);
  });

  it("takes a session's title from its first user message while it has none", async () => {
    const s = await open();
    const id = await s.createSession();
    await s.appendMessage({
      session_id: id,
      role: "user",
      content: [{ type: "text", text: "plan the trip" }],
    });
    expect(await s.getSession(id)).toMatchObject({ title: "plan the trip", title_source: "first_message" });
  });

  it("refuses a message to an unknown session, applying nothing of the write", async () => {
    const s = await open();
    const error = await rejected(() => s.write([session("s_new", 1_000), message("s_gone", "u1", "x")]));
    expect(error.code).toBe("store_unknown_session");
    expect(await s.getSession("s_new")).toBeNull();
    const [result] = await s.write([message("s_gone", "u1", "x")], { createMissingSessions: true });
    expect(result?.message).toMatchObject({ seq: 1, duplicate: false });
    expect((await s.getSession("s_gone"))?.source).toBe("recovered");
  });

  it("starts, updates and lists turns", async () => {
    const s = await open();
    const id = await s.createSession();
    const turn = await s.startTurn(id, 60_000, "owner:a", { role: "user", content: "question" });
    expect(await s.getTurns(id)).toMatchObject([{ id: turn, status: "running", lease_owner: "owner:a" }]);
    expect((await s.getMessages(id))[0]).toMatchObject({ turn_id: turn, content: "question" });
    expect((await s.runningTurns()).map((t) => t.id)).toEqual([turn]);
    await s.updateTurn({ id: turn, status: "interrupted", interrupt_count: 1, error: "gone" });
    expect(await s.runningTurns()).toEqual([]);
    const interrupted = await s.interruptedTurnsOf("owner:a", 0);
    expect(interrupted).toMatchObject([
      { id: turn, status: "interrupted", interrupt_count: 1, error: "gone" },
    ]);
    expect(await s.interruptedTurnsOf("owner:b", 0)).toEqual([]);
    expect((await s.getSession(id))?.last_turn).toMatchObject({ id: turn });
    const begun = s.beginTurn({ sessionId: id, leaseMs: 1_000 });
    await begun.applied;
    await begun.durable;
    expect((await s.getTurns(id)).map((t) => t.id)).toEqual([turn, begun.id]);
  });

  it("refuses a stale lease epoch's message and turn update with lease_lost, changing nothing", async () => {
    const s = await open();
    const events: StoreEvent[] = [];
    s.on((e) => events.push(e));
    const sid = await s.createSession();
    const begun = s.beginTurn({
      sessionId: sid,
      leaseMs: 60_000,
      owner: "owner:a",
      question: { role: "user", content: "question" },
    });
    await begun.durable;
    const turn = begun.id;
    expect(begun.epoch).toBe(FIRST_EPOCH);
    expect((await s.getTurns(sid))[0]?.lease_epoch).toBe(FIRST_EPOCH);
    // The reaper interrupts (epoch 2), another process takes it over (epoch 3).
    await s.write([{ op: "turn.update", id: turn, status: "interrupted", new_epoch: true }]);
    const point = await restartTurn(s, sid, turn, 60_000, 5_000, "owner:b");
    expect(point.epoch).toBe(FIRST_EPOCH + 2);
    const before = { turns: await s.getTurns(sid), messages: await s.getMessages(sid) };

    const stale = await rejected(() =>
      s.write([
        put("kept-out", { v: 1 }, 9_000, sid),
        {
          ...(message(sid, "late", "the old owner's answer") as MessageAppendOp),
          turn_id: turn,
          lease_epoch: FIRST_EPOCH,
        },
      ]),
    );
    expect(stale.code).toBe("lease_lost");
    expect(stale.message).toContain(turn);
    expect(stale.message).toMatch(/epoch 1 but the turn is at epoch 3/);
    expect(stale.message).toContain("another process took the turn over");
    const beat = await rejected(() =>
      s.updateTurn({ id: turn, heartbeat_at: 9_999, lease_expires_at: 99_999, lease_epoch: FIRST_EPOCH }),
    );
    expect(beat.code).toBe("lease_lost");
    const end = await rejected(() =>
      s.updateTurn({ id: turn, status: "completed", lease_owner: null, lease_epoch: FIRST_EPOCH }),
    );
    expect(end.code).toBe("lease_lost");
    // Nothing of the refused writes landed: not the message, not the record written with it.
    expect(await s.getTurns(sid)).toEqual(before.turns);
    expect(await s.getMessages(sid)).toEqual(before.messages);
    expect(await s.getRecord("note", "kept-out")).toBeNull();
    const told = events.filter((e) => e.type === "lease_lost");
    expect(told).toHaveLength(3);
    expect(told[0]).toMatchObject({ layer: "store", turn_id: turn, held_epoch: 1, current_epoch: 3 });

    // The owner that holds the current epoch writes as before; writes without one are not fenced.
    await s.appendMessage({
      session_id: sid,
      role: "assistant",
      content: "new owner",
      turn_id: turn,
      lease_epoch: 3,
    });
    await s.updateTurn({ id: turn, heartbeat_at: 10_000, lease_epoch: 3 });
    await s.appendMessage({ session_id: sid, role: "assistant", content: "unfenced", turn_id: turn });
    expect((await s.getMessages(sid)).map((m) => m.content)).toEqual(["question", "new owner", "unfenced"]);
    expect((await s.getTurns(sid))[0]).toMatchObject({
      status: "running",
      lease_owner: "owner:b",
      lease_epoch: 3,
    });
  });

  it("runs one turn per session: a start or resume beside a running turn is refused whole with turn_running", async () => {
    const s = await open();
    const sid = await s.createSession();
    const other = await s.createSession();
    const first = await s.startTurn(sid, 60_000, "owner:a", { role: "user", content: "first" });
    const before = { turns: await s.getTurns(sid), messages: await s.getMessages(sid) };
    const second = await rejected(() =>
      s.startTurn(sid, 60_000, "owner:b", { role: "user", content: "second" }, [put("kept-out", 1, 9_000)]),
    );
    expect(second.code).toBe("turn_running");
    expect(second.message).toContain(`session ${sid}`);
    expect(second.message).toContain(`turn ${first} (held by owner:a)`);
    expect(second.hint).toContain(`tenax sessions stop ${sid}`);
    expect(second.data).toMatchObject({ session_id: sid, running_turn_id: first, owner: "owner:a" });
    // Nothing of the refused write landed: not the turn, not its question, not what came before it.
    expect(await s.getTurns(sid)).toEqual(before.turns);
    expect(await s.getMessages(sid)).toEqual(before.messages);
    expect(await s.getRecord("note", "kept-out")).toBeNull();
    // Another session is not held by it.
    await s.startTurn(other, 60_000, "owner:b", { role: "user", content: "elsewhere" });

    // A resume of an interrupted turn beside the running one is refused the same way.
    await s.updateTurn({ id: first, status: "interrupted", new_epoch: true });
    const next = await s.startTurn(sid, 60_000, "owner:b", { role: "user", content: "went on" });
    const resume = await rejected(() => restartTurn(s, sid, first, 60_000, 5_000, "owner:c"));
    expect(resume.code).toBe("turn_running");
    expect(resume.data).toMatchObject({ running_turn_id: next, owner: "owner:b" });
    expect((await s.getTurns(sid)).map((t) => [t.id, t.status])).toEqual([
      [first, "interrupted"],
      [next, "running"],
    ]);
    // Once the running turn ends, the session takes a new one.
    await s.updateTurn({ id: next, status: "completed" });
    await restartTurn(s, sid, first, 60_000, 5_000, "owner:c");
    expect((await s.runningTurns()).filter((t) => t.session_id === sid).map((t) => t.id)).toEqual([first]);
  });

  it("lets exactly one of several concurrent turn starts in a session win, every time", async () => {
    const s = await open();
    const sid = await s.createSession();
    for (let round = 0; round < 30; round++) {
      const outcomes = await Promise.allSettled(
        ["owner:a", "owner:b", "owner:c"].map((owner) =>
          s.startTurn(sid, 60_000, owner, { role: "user", content: `${owner} ${round}` }),
        ),
      );
      const won = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
      const lost = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as { code?: string }] : []));
      expect(won, `round ${round}`).toHaveLength(1);
      expect(lost.map((e) => e.code)).toEqual(["turn_running", "turn_running"]);
      expect((await s.runningTurns()).map((t) => t.id)).toEqual(won);
      await s.updateTurn({ id: won[0] ?? "", status: "completed" });
    }
    // Only the winners' questions were stored.
    expect(await s.getMessages(sid)).toHaveLength(30);
  });

  it("lets exactly one of two concurrent takeovers of an interrupted turn win, every time", async () => {
    const s = await open();
    const sid = await s.createSession();
    const rounds = 40;
    for (let round = 0; round < rounds; round++) {
      const turn = await s.startTurn(sid, 60_000, "owner:dead", { role: "user", content: `q${round}` });
      await s.write([{ op: "turn.update", id: turn, status: "interrupted", new_epoch: true }]);
      const outcomes = await Promise.allSettled(
        ["owner:a", "owner:b"].map((owner) => restartTurn(s, sid, turn, 60_000, 1_000 + round, owner)),
      );
      const won = outcomes.filter((o) => o.status === "fulfilled");
      const lost = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as { code?: string }] : []));
      expect(won, `round ${round}`).toHaveLength(1);
      expect(lost.map((e) => e.code)).toEqual(["lease_lost"]);
      const row = (await s.getTurns(sid)).find((t) => t.id === turn);
      expect(row).toMatchObject({ status: "running", lease_epoch: FIRST_EPOCH + 2 });
      const winner = (won[0] as PromiseFulfilledResult<{ epoch: number }>).value;
      expect(winner.epoch).toBe(FIRST_EPOCH + 2);
      await s.updateTurn({ id: turn, status: "completed", lease_epoch: winner.epoch });
    }
  });

  it("keeps records last-writer-wins by updated_at, a null value a tombstone", async () => {
    const s = await open();
    const sid = await s.createSession();
    await s.write([put("a", { v: 1 }, 200, sid), put("b", { v: 2 }, 100)]);
    expect(await s.getRecord("note", "a")).toEqual({ v: 1 });
    expect(await s.getRecordText("note", "a")).toBe('{"v":1}');
    expect((await s.listRecords("note")).map((r) => r.key)).toEqual(["b", "a"]);
    expect((await s.listRecords("note", { sessionId: sid })).map((r) => r.key)).toEqual(["a"]);
    const stamp = await s.recordStamp("note");
    const versions = await s.recordVersions("note");
    await s.write([put("a", { v: "older" }, 150)]);
    expect(await s.getRecord("note", "a")).toEqual({ v: 1 });
    await s.write([put("a", null, 300)]);
    expect(await s.getRecord("note", "a")).toBeNull();
    await s.write([put("a", { v: "revived?" }, 250)]);
    expect(await s.getRecord("note", "a")).toBeNull();
    expect((await s.listRecords("note")).map((r) => r.key)).toEqual(["b"]);
    expect(await s.recordStamp("note")).not.toBe(stamp);
    expect(versions.get("a")).toBe("200:7");
    expect((await s.recordVersions("note")).has("a")).toBe(false);
    await s.putRecord("note", "c", [1, 2]);
    expect(await s.getRecord("note", "c")).toEqual([1, 2]);
  });

  it("claims a record only over what was read; a conflict applies nothing of the write", async () => {
    const s = await open();
    const sid = await s.createSession();
    await s.write([claim("job", { by: "a" }, null)]);
    const conflict = await rejected(() =>
      s.write([message(sid, "u1", "hi"), claim("job", { by: "b" }, null)]),
    );
    expect(conflict.code).toBe("record_conflict");
    expect(await s.getMessages(sid)).toEqual([]);
    expect(await s.getRecord("lease", "job")).toEqual({ by: "a" });
    const stale = await rejected(() => s.write([claim("job", { by: "c" }, '{"by":"x"}')]));
    expect(stale.code).toBe("record_conflict");
    await s.write([claim("job", { by: "d" }, '{"by":"a"}', 6_000)]);
    expect(await s.getRecord("lease", "job")).toEqual({ by: "d" });
  });

  it("stores, finds and deletes responses", async () => {
    const s = await open();
    const sid = await s.createSession();
    await s.putResponse(response("r1", sid, 1_000));
    await s.putResponse(response("r2", sid, 2_000, "shared"));
    await s.putResponse(response("r3", null, 3_000, "shared"));
    expect(await s.getResponse("r1")).toMatchObject({
      id: "r1",
      session_id: sid,
      output: [{ id: "r1_item" }],
    });
    expect(await s.latestResponseId(sid)).toBe("r2");
    expect((await s.responseWithItem("shared"))?.id).toBe("r3");
    expect(await s.responseWithItem("nothing")).toBeNull();
    expect(await s.deleteResponse("r3")).toBe(true);
    expect(await s.deleteResponse("r3")).toBe(false);
    expect((await s.responseWithItem("shared"))?.id).toBe("r2");
  });

  it("deletes a session with its messages, turns, records and responses", async () => {
    const s = await open();
    const sid = await s.createSession();
    const keep = await s.createSession();
    await s.startTurn(sid, 1_000, "o", { role: "user", content: "q" });
    await s.appendMessage({ session_id: sid, role: "assistant", content: "a" });
    await s.write([put("r", 1, 100, sid), put("k", 2, 100, keep)]);
    await s.putResponse(response("r1", sid, 1_000));
    expect(await s.deleteSession(sid)).toBe(3);
    expect(await s.getSession(sid)).toBeNull();
    expect(await s.getMessages(sid)).toEqual([]);
    expect(await s.getTurns(sid)).toEqual([]);
    expect(await s.getRecord("note", "r")).toBeNull();
    expect(await s.getResponse("r1")).toBeNull();
    expect(await s.getRecord("note", "k")).toBe(2);
  });

  it("prunes idle sessions, keeping those with a running turn", async () => {
    const s = await open();
    await s.write([session("s_old", 1_000), session("s_busy", 1_000), session("s_new", 90_000)]);
    await s.write([
      {
        op: "turn.start",
        id: "t1",
        session_id: "s_busy",
        started_at: 1_000,
        lease_owner: null,
        lease_expires_at: null,
      },
    ]);
    expect(await s.pruneSessions(50_000, true)).toEqual(["s_old"]);
    expect(await s.getSession("s_old")).not.toBeNull();
    expect(await s.pruneSessions(50_000)).toEqual(["s_old"]);
    expect(await s.getSession("s_old")).toBeNull();
    expect((await s.listSessions()).map((v) => v.id).sort()).toEqual(["s_busy", "s_new"]);
  });

  it("searches messages by word and phrase", async () => {
    const s = await open();
    const sid = await s.createSession();
    await s.appendMessage({ session_id: sid, role: "user", content: "the quick brown fox jumps" });
    await s.appendMessage({ session_id: sid, role: "assistant", content: "a slow green turtle" });
    const result = await s.search("brown");
    expect(result).toMatchObject({ query: "brown", order: "relevance", pending: 0 });
    expect(result.hits).toHaveLength(1);
    expect(result.hits[0]).toMatchObject({
      session_id: sid,
      message: { content: "the quick brown fox jumps" },
    });
    expect(result.hits[0]?.snippet).toContain("brown");
    expect((await s.search('"green turtle"')).hits).toHaveLength(1);
    expect((await s.search("turtle fox")).hits).toHaveLength(0);
    expect((await rejected(() => s.search("  ?! "))).code).toBe("usage");
  });

  it("finds a conversation by the hash set on its session", async () => {
    const s = await open();
    const sid = await s.createSession();
    expect(await s.conversationHash(sid)).toBeNull();
    await s.write([{ op: "session.update", id: sid, conversation_hash: "h1", updated_at: 5_000 }]);
    expect(await s.conversationHash(sid)).toBe("h1");
    expect(await s.findConversation("h1")).toBe(sid);
    expect(await s.findConversation("h2")).toBeNull();
  });

  it("merges credential verdicts by the ledger's rules", async () => {
    const s = await open();
    const ledger = s.credentials();
    const fp = "a1b2c3d4e5f6";
    await ledger.record("p", fp, {
      status: "cooling",
      cooldown_until: 2_000,
      failures: "increment",
      now: 100,
    });
    await ledger.record("p", fp, {
      status: "cooling",
      cooldown_until: 1_000,
      failures: "increment",
      now: 200,
    });
    expect(await ledger.get("p")).toMatchObject([{ status: "cooling", cooldown_until: 2_000, failures: 2 }]);
    expect(await ledger.usable("p", [fp, "ffffffffffff"], 1_500)).toEqual(["ffffffffffff"]);
    expect(await ledger.usable("p", [fp], 2_000)).toEqual([fp]);
    await ledger.record("p", fp, { status: "disabled", reason: "revoked", now: 300 });
    const kept = await ledger.record("p", fp, { status: "cooling", cooldown_until: 9_000, now: 400 });
    expect(kept).toMatchObject({ status: "disabled", reason: "revoked", cooldown_until: null });
    const stale = await ledger.record("p", fp, {
      status: "ok",
      failures: "reset",
      now: 500,
      unless_changed_after: 350,
    });
    expect(stale.status).toBe("disabled");
    await ledger.record("p", fp, { status: "ok", failures: "reset", now: 600, unless_changed_after: 450 });
    expect(await s.credentialStates()).toMatchObject([
      { provider: "p", fingerprint: fp, status: "ok", failures: 0 },
    ]);
    expect(
      (await rejected(() => ledger.record("p", "sk-not-a-fingerprint", { status: "ok", now: 1 }))).code,
    ).toBe("credential_not_fingerprint");
  });

  it("replays spooled writes, counting messages already present as duplicates", async () => {
    const s = await open();
    const record: SpoolRecord = {
      v: 1,
      spooled_at: 1_000,
      profile: "default",
      store: "elsewhere",
      reason: "unavailable",
      ops: [message("s_lost", "u1", "one"), message("s_lost", "u2", "two")],
    };
    expect(await s.replay([record])).toEqual({ ops: 2, messages: 2, duplicates: 0 });
    expect(await s.replay([record])).toEqual({ ops: 2, messages: 0, duplicates: 2 });
    expect((await s.getMessages("s_lost")).map((m) => m.seq)).toEqual([1, 2]);
  });

  it("redacts the profile's secrets from every write before it is stored", async () => {
    const secret = "sk-live-9f8e7d6c5b4a3210";
    const redactor = new Redactor([{ name: "OPENAI_API_KEY", value: secret }]);
    const s = (await engine.open({ redactor })).store;
    const id = await s.createSession();
    await s.appendMessage({ session_id: id, role: "user", content: `my key is ${secret}` });
    await s.putRecord("note", "k", { key: secret });
    const [stored] = await s.getMessages(id);
    expect(stored?.content).not.toContain(secret);
    expect(stored?.content).toContain("OPENAI_API_KEY");
    expect(await s.getRecordText("note", "k")).not.toContain(secret);
  });

  it("keeps the instance registry's rows: register, heartbeat, stop, list, prune", async () => {
    const s = await open();
    const rows = s.instances();
    expect(rows.liveness).toBe(engine.name === "sqlite" ? "process" : "lock");
    const before = await rows.now();
    const a = { id: "i_a", host: "host-a", pid: 101, version: "1.2.3", meta: { holds: ["cron"] } };
    const started = await rows.register(a);
    expect(started).toBeGreaterThanOrEqual(before);
    await rows.register({ id: "i_b", host: "host-b", pid: 202, version: "", meta: {} });
    const [listedA] = await s.listInstances();
    expect(listedA).toEqual({
      ...a,
      started_at: started,
      heartbeat_at: started,
      stopped_at: null,
      warnings: [],
    });

    // A heartbeat returns the engine's time; meta is replaced only when given.
    const beat = await rows.heartbeat("i_a", { holds: [] });
    expect(beat).toBeGreaterThanOrEqual(started);
    expect(await rows.heartbeat("i_b")).toBeGreaterThanOrEqual(started);
    expect((await s.listInstances()).map((i) => [i.id, i.heartbeat_at >= started, i.meta])).toEqual([
      ["i_a", true, { holds: [] }],
      ["i_b", true, {}],
    ]);
    expect(await rows.heartbeat("i_unknown")).toBeNull();

    // Stopped once: a second stop keeps the first time, and a stopped instance beats no more.
    await rows.stop("i_a");
    const stoppedAt = (await s.listInstances())[0]?.stopped_at;
    expect(stoppedAt).toBeGreaterThanOrEqual(started);
    await rows.stop("i_a");
    expect((await s.listInstances())[0]?.stopped_at).toBe(stoppedAt);
    expect(await rows.heartbeat("i_a")).toBeNull();

    // Housekeeping: i_a (stopped) and i_b (silent) are older than the bound; i_c beat since.
    await rows.register({ id: "i_c", host: "host-c", pid: 303, version: "", meta: {} });
    const pivot = Math.max(stoppedAt ?? 0, beat ?? 0);
    while ((await rows.now()) < pivot + 300) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await rows.heartbeat("i_c")).toBeGreaterThanOrEqual(pivot + 300);
    expect(await rows.prune(60_000)).toEqual([]);
    const bound = (await rows.now()) - (pivot + 150);
    expect((await rows.prune(bound)).sort()).toEqual(["i_a", "i_b"]);
    expect((await s.listInstances()).map((i) => i.id)).toEqual(["i_c"]);
  });

  it("reports health and stats in the shared shape", async () => {
    const s = await open();
    await s.createSession();
    expect(s.health()).toMatchObject({
      engine: engine.name,
      path: s.where,
      writable: true,
      unavailable: null,
      corrupt: null,
      disk_failure: null,
      spooled_records: 0,
      credentials_local: false,
    });
    expect(s.engine).toBe(engine.name);
    expect(await s.stats()).toMatchObject({ sessions: 1, messages: 0, turns: {} });
  });
});

postgresOnly(cluster);
