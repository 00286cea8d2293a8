// The conversation fingerprint (a chain, so it extends turn by turn), its indexed lookup in a real
// store (migration 5, the newest session wins), and the plain and cleaned titles.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openStore, releaseStore } from "../store/registry.js";
import { cleanTitle, conversationHash } from "./conversations.js";

const said = (role: "user" | "assistant", content: string) => ({ role, content });

describe("conversation fingerprints", () => {
  it("extend turn by turn, and differ for any other role, text or order", () => {
    const whole = conversationHash(null, [said("user", "a"), said("assistant", "b"), said("user", "c")]);
    const step = conversationHash(conversationHash(null, [said("user", "a")]), [
      said("assistant", "b"),
      said("user", "c"),
    ]);
    expect(step).toBe(whole);
    expect(conversationHash(null, [said("user", "ab")])).not.toBe(
      conversationHash(null, [said("user", "a"), said("user", "b")]),
    );
    expect(conversationHash(null, [said("user", "a")])).not.toBe(
      conversationHash(null, [said("assistant", "a")]),
    );
    expect(conversationHash(null, [])).toBe("");
  });

  it("are found in the store by one indexed lookup, the newest session first", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const older = await store.createSession({ source: "gateway" });
    const newer = await store.createSession({ source: "gateway" });
    const hash = conversationHash(null, [said("user", "hi"), said("assistant", "echo: hi")]);
    await store.write([{ op: "session.update", id: older, conversation_hash: hash, updated_at: 10 }]);
    expect(await store.findConversation(hash)).toBe(older);
    expect(await store.conversationHash(older)).toBe(hash);
    await store.write([
      { op: "session.update", id: newer, conversation_hash: hash, updated_at: Date.now() + 1000 },
    ]);
    expect(await store.findConversation(hash)).toBe(newer);
    expect(await store.findConversation("nothing")).toBeNull();
    expect(await store.conversationHash("s_missing")).toBeNull();
    const db = new Database(paths.state, { readonly: true });
    const plan = db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE conversation_hash = ? ORDER BY updated_at DESC LIMIT 1",
      )
      .all("x") as { detail: string }[];
    db.close();
    expect(plan.map((p) => p.detail).join(" ")).toContain("sessions_conversation");
    await releaseStore(store);
  });
});

describe("titles", () => {
  it("a title model's answer loses quotes, a Title: prefix and the end stop; nothing left is null", () => {
    expect(cleanTitle('"Title: Trip to the Alps."\nmore')).toBe("Trip to the Alps");
    expect(cleanTitle("  ")).toBeNull();
    expect(cleanTitle('""')).toBeNull();
  });
});
