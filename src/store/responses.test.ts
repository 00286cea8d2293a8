// Stored Responses API answers: put and read back through the one writer, the newest of a session,
// delete, a row that does not parse reported by id, deleting a session deletes its responses, and the
// response holding an output item found by the item's id.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openReader, openStore, releaseStore } from "./registry.js";

const row = (id: string, sessionId: string | null, createdAt: number, previous: string | null = null) => ({
  id,
  session_id: sessionId,
  model: "tenax",
  status: "completed",
  previous_response_id: previous,
  input: JSON.stringify([{ type: "message", role: "user", content: `question ${id}` }]),
  output: JSON.stringify([
    { type: "message", role: "assistant", content: [{ type: "output_text", text: id }] },
  ]),
  response: JSON.stringify({ object: "response", instructions: null }),
  created_at: createdAt,
});

describe("stored responses", () => {
  it("put, get, newest of a session, delete; a session's deletion takes its responses", async () => {
    const paths = tempProfile();
    const deps = fakeDeps();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
    const session = await store.createSession({ title: "chain" });
    await store.putResponse(row("resp_1", session, 1000));
    await store.putResponse(row("resp_2", session, 2000, "resp_1"));
    await store.putResponse(row("resp_x", null, 3000));

    const got = await store.getResponse("resp_2");
    expect(got).toMatchObject({
      id: "resp_2",
      session_id: session,
      previous_response_id: "resp_1",
      input: [{ type: "message", role: "user", content: "question resp_2" }],
      output: [{ type: "message", content: [{ text: "resp_2" }] }],
      response: { object: "response" },
      created_at: 2000,
    });
    expect(await store.getResponse("resp_nope")).toBeNull();
    expect(await store.latestResponseId(session)).toBe("resp_2");

    expect(await store.deleteResponse("resp_2")).toBe(true);
    expect(await store.deleteResponse("resp_2")).toBe(false);
    expect(await store.getResponse("resp_2")).toBeNull();
    expect(await store.latestResponseId(session)).toBe("resp_1");

    await store.deleteSession(session);
    expect(await store.getResponse("resp_1")).toBeNull();
    expect((await store.getResponse("resp_x"))?.id).toBe("resp_x");
    await releaseStore(store);

    // A reader sees what the writer committed.
    const reader = openReader(paths);
    expect((await reader.getResponse("resp_x"))?.model).toBe("tenax");
    reader.close();
  });

  it("finds the newest response holding an output item by the item's id, and none for other ids", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const withItems = (id: string, createdAt: number, ids: string[]) => ({
      ...row(id, null, createdAt),
      output: JSON.stringify(
        ids.map((itemId) => ({ type: "message", id: itemId, role: "assistant", content: [] })),
      ),
    });
    await store.putResponse(withItems("resp_a", 1000, ["msg_1", "fc_2"]));
    await store.putResponse(withItems("resp_b", 2000, ["msg_3"]));
    // The id only inside a text, not as an item's id: not a match.
    await store.putResponse({
      ...row("resp_c", null, 3000),
      output: JSON.stringify([{ type: "message", id: "msg_9", content: [{ text: '"fc_2"' }] }]),
    });
    await store.putResponse(row("resp_bad", null, 4000));
    const db = new Database(paths.state);
    db.prepare("UPDATE responses SET output = '{not json \"msg_1\"' WHERE id = 'resp_bad'").run();
    db.close();
    expect((await store.responseWithItem("fc_2"))?.id).toBe("resp_a");
    expect((await store.responseWithItem("msg_1"))?.id).toBe("resp_a");
    expect((await store.responseWithItem("msg_3"))?.id).toBe("resp_b");
    expect(await store.responseWithItem("msg_")).toBeNull();
    expect(await store.responseWithItem("resp_a")).toBeNull();
    await releaseStore(store);
  });

  it("a stored row that does not parse is an error naming the response, not a half-read answer", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.putResponse(row("resp_bad", null, 1));
    const db = new Database(paths.state);
    db.prepare("UPDATE responses SET output = '{not json' WHERE id = 'resp_bad'").run();
    db.close();
    await expect(store.getResponse("resp_bad")).rejects.toThrow(
      /stored response resp_bad cannot be read: output/,
    );
    await releaseStore(store);
  });
});
