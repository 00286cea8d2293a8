// memory, todo and session_search over a real store: what they write outlives the store handle
// (a restart), and bad input gets a specific error.
import { describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { openStore, releaseStore } from "../../store/registry.js";
import { durableTools } from "./durable.js";
import type { Tool } from "./types.js";

function byName(tools: Tool[], name: string): Tool {
  const tool = tools.find((t) => t.spec.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool;
}

describe("durable tools", () => {
  it("memory notes and a session's todo list survive a restart", async () => {
    const paths = tempProfile();
    const cwd = tempDir();
    let store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession();
    let tools = durableTools(store);
    const context = { ...toolContext(cwd), sessionId: session };
    const added = (await byName(tools, "memory").run(
      { action: "add", text: "the staging host is db-2" },
      context,
    )) as {
      added: string;
    };
    await byName(tools, "todo").run(
      { action: "write", items: [{ text: "migrate db-2" }, { text: "tell the team", status: "done" }] },
      context,
    );
    await releaseStore(store);

    store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    tools = durableTools(store);
    expect(await byName(tools, "memory").run({ action: "list" }, context)).toEqual({
      notes: [{ id: added.added, text: "the staging host is db-2", created_at: expect.any(Number) }],
    });
    expect(await byName(tools, "todo").run({ action: "read" }, context)).toEqual({
      items: [
        { id: "1", text: "migrate db-2", status: "pending" },
        { id: "2", text: "tell the team", status: "done" },
      ],
    });
    // Another session has its own list.
    expect(await byName(tools, "todo").run({ action: "read" }, { ...context, sessionId: "s_other" })).toEqual(
      { items: [] },
    );
    await byName(tools, "memory").run({ action: "remove", id: added.added }, context);
    expect(await byName(tools, "memory").run({ action: "list" }, context)).toEqual({ notes: [] });
    await releaseStore(store);
  });

  it("says exactly what is wrong with bad input", async () => {
    const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
    const tools = durableTools(store);
    const context = toolContext(tempDir());
    await expect(byName(tools, "memory").run({ action: "add" }, context)).rejects.toThrow(
      /argument "text" is required/,
    );
    await expect(byName(tools, "memory").run({ action: "remove", id: "note_nope" }, context)).rejects.toThrow(
      /there is no note "note_nope"/,
    );
    await expect(
      byName(tools, "todo").run({ action: "write", items: [{ text: "x", status: "later" }] }, context),
    ).rejects.toThrow(/argument "items\.0\.status"/);
    await expect(byName(tools, "memory").run({ action: "forget" }, context)).rejects.toThrow(
      /argument "action"/,
    );
    await releaseStore(store);
  });

  it("session_search finds messages of past sessions", async () => {
    const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
    const old = await store.createSession();
    await store.appendMessage({
      session_id: old,
      role: "user",
      content: "the quokka deployment failed on tuesday",
    });
    await store.appendMessage({ session_id: old, role: "assistant", content: "unrelated answer" });
    const found = (await byName(durableTools(store), "session_search").run(
      { query: "quokka" },
      toolContext(tempDir()),
    )) as {
      hits: Array<{ session_id: string; role: string; snippet: string }>;
    };
    expect(found.hits).toHaveLength(1);
    expect(found.hits[0]).toMatchObject({ session_id: old, role: "user" });
    expect(found.hits[0]?.snippet).toContain("quokka");
    await releaseStore(store);
  });
});
