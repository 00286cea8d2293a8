// Durable records (memory notes, todo lists, component state): last writer wins by time, a
// replayed older write never undoes a newer one, a deletion stays deleted, and deleting a session
// deletes its records.
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openReader, openStore, releaseStore } from "./registry.js";

describe("records", () => {
  it("put, read, list, delete; a replayed older write does not undo a newer one", async () => {
    const paths = tempProfile();
    const deps = fakeDeps();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
    await store.putRecord("memory", "n1", { text: "the build needs node 20" });
    deps.advance(10);
    await store.putRecord("memory", "n2", { text: "deploys go out on fridays" });
    expect(await store.getRecord("memory", "n1")).toEqual({ text: "the build needs node 20" });
    expect((await store.listRecords<{ text: string }>("memory")).map((r) => r.value.text)).toEqual([
      "the build needs node 20",
      "deploys go out on fridays",
    ]);

    deps.advance(10);
    await store.putRecord("memory", "n1", null);
    expect(await store.getRecord("memory", "n1")).toBeNull();
    // An older put arriving late (a spool replay) cannot bring the note back.
    await store.write([
      {
        op: "record.put",
        kind: "memory",
        key: "n1",
        session_id: null,
        value: '{"text":"old"}',
        updated_at: deps.clock.now() - 15,
      },
    ]);
    expect(await store.getRecord("memory", "n1")).toBeNull();
    expect(await store.listRecords("memory")).toHaveLength(1);

    const reader = openReader(paths);
    expect(await reader.getRecord("memory", "n2")).toEqual({ text: "deploys go out on fridays" });
    reader.close();
    await releaseStore(store);
  });

  it("deleting a session deletes its records and no others", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const a = await store.createSession();
    const b = await store.createSession();
    await store.putRecord("todo", a, [{ text: "write tests", status: "pending" }], { sessionId: a });
    await store.putRecord("todo", b, [{ text: "ship", status: "done" }], { sessionId: b });
    expect(await store.listRecords("todo", { sessionId: a })).toHaveLength(1);
    await store.deleteSession(a);
    expect(await store.getRecord("todo", a)).toBeNull();
    expect(await store.getRecord("todo", b)).toEqual([{ text: "ship", status: "done" }]);
    await releaseStore(store);
  });

  it("record.claim writes only over what was read: of two claims of one key, one wins and the loser writes nothing", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const claim = (value: string, expect: string | null, also: string) =>
      store.write([
        { op: "record.claim", kind: "slot", key: "k", session_id: null, value, expect, updated_at: 1 },
        { op: "record.put", kind: "side", key: also, session_id: null, value: "1", updated_at: 1 },
      ]);
    // Two claims in one group commit, both planned from "absent".
    const results = await Promise.allSettled([claim('"a"', null, "a"), claim('"b"', null, "b")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "record_conflict" });
    expect(await store.getRecordText("slot", "k")).toBe('"a"');
    // The loser's other write was not applied either.
    expect(await store.getRecord("side", "b")).toBeNull();
    expect(await store.getRecord("side", "a")).toBe(1);
    // A claim over the value read wins; one over a stale value loses, alone too.
    await claim('"c"', '"a"', "c");
    await expect(claim('"d"', '"a"', "d")).rejects.toMatchObject({ code: "record_conflict" });
    expect(await store.getRecordText("slot", "k")).toBe('"c"');
    const stamp = await store.recordStamp("slot");
    await store.putRecord("slot", "k", null);
    expect(await store.recordStamp("slot")).not.toBe(stamp);
    await releaseStore(store);
  });

  it("recordVersions: a version per live record that changes when it is rewritten, in the same millisecond too", async () => {
    const paths = tempProfile();
    const deps = fakeDeps();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
    expect((await store.recordVersions("job")).size).toBe(0);
    await store.putRecord("job", "a", { enabled: true });
    await store.putRecord("job", "b", { enabled: true });
    await store.putRecord("other", "c", 1);
    const first = await store.recordVersions("job");
    expect([...first.keys()].sort()).toEqual(["a", "b"]);
    // The clock does not move: a pause written in the same millisecond still changes a's version.
    await store.putRecord("job", "a", { enabled: false });
    const second = await store.recordVersions("job");
    expect(second.get("a")).not.toBe(first.get("a"));
    expect(second.get("b")).toBe(first.get("b"));
    await store.putRecord("job", "b", null);
    expect([...(await store.recordVersions("job")).keys()]).toEqual(["a"]);
    const reader = openReader(paths);
    expect(await reader.recordVersions("job")).toEqual(await store.recordVersions("job"));
    reader.close();
    await releaseStore(store);
  });
});
