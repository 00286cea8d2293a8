// `tenax sessions ...` through the real CLI: listings with bad rows, show by prefix, search,
// export, delete, prune, stats, reindex, check, and the commands that its errors print.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { printedCommands, requireBuild, runPrinted, tenax, tenaxAsync } from "./helpers/cli.js";
import { btreePages, checkpoint, garbageAfterHeader, overwritePages, PAGE } from "./helpers/corrupt.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(requireBuild);

async function seededHome(): Promise<{ home: string; ids: string[] }> {
  const home = tempDir();
  const paths = profilePaths(home, "default");
  let now = Date.UTC(2026, 0, 1);
  const store = await openStore(paths, {
    integrityCheckTimeoutMs: 0,
    deps: { clock: { now: () => (now += 1000) } },
  });
  const ids: string[] = [];
  for (const title of ["deploy notes", "grocery list"]) {
    const id = await store.createSession({ title });
    ids.push(id);
    await store.appendMessage({
      session_id: id,
      role: "user",
      content: `about ${title}: the platypus is here`,
    });
    await store.appendMessage({ session_id: id, role: "assistant", content: "noted" });
  }
  await releaseStore(store);
  const raw = new Database(paths.state);
  raw.exec(`INSERT INTO sessions (id, title, source, created_at, updated_at) VALUES ('s_bad', 'bad times', 'cli', 'yesterday', 1e30);
            INSERT INTO messages (uid, session_id, seq, role, content, tool_calls, created_at)
            VALUES ('u_bad', 's_bad', 1, 'assistant', 'odd', '{oops', 'noon');`);
  raw.close();
  return { home, ids };
}

describe("tenax sessions", () => {
  it("lists, shows, exports and counts bad rows with warnings instead of failing", async () => {
    const { home, ids } = await seededHome();
    const prefix = ids[0]?.slice(0, 14) ?? "";
    const out = join(home, "export.json");
    // None of these changes the store: they run at once, and are checked one by one below.
    const [list, text, show, byPrefix, exported, statsRun] = await Promise.all([
      tenaxAsync(home, ["sessions", "list", "--json"]),
      tenaxAsync(home, ["sessions", "list"]),
      tenaxAsync(home, ["sessions", "show", "s_bad"]),
      tenaxAsync(home, ["sessions", "show", prefix, "--json"]),
      tenaxAsync(home, ["sessions", "export", "s_bad", "--output", out]),
      tenaxAsync(home, ["sessions", "stats", "--json"]),
    ]);
    expect(list.status).toBe(0);
    const sessions = JSON.parse(list.stdout).sessions as { id: string; warnings: string[] }[];
    expect(sessions.map((s) => s.id).sort()).toEqual([...ids, "s_bad"].sort());
    expect(sessions.find((s) => s.id === "s_bad")?.warnings.length).toBe(2);
    expect(list.stderr).toMatch(/warning: session s_bad: created_at is string "yesterday"/);

    expect(text.stdout).toMatch(/s_bad !/);
    expect(text.stdout).toMatch(/deploy notes/);

    expect(show.status).toBe(0);
    expect(show.stdout).toContain("odd");
    expect(show.stderr).toMatch(/message #1 \(id \d+\): tool_calls is not valid JSON/);

    expect(JSON.parse(byPrefix.stdout).messages.map((m: { content: string }) => m.content)).toEqual([
      "about deploy notes: the platypus is here",
      "noted",
    ]);

    expect(exported.status).toBe(0);
    const document = JSON.parse(readFileSync(out, "utf8"));
    expect(document).toMatchObject({ format: "tenax.session.v1", session: { id: "s_bad" } });
    expect(document.messages[0].warnings[0]).toMatch(/tool_calls/);

    const stats = JSON.parse(statsRun.stdout);
    expect(stats).toMatchObject({
      sessions: 3,
      messages: 5,
      bad_rows: { sessions: 1, messages: 1 },
      profile: "default",
    });
  });

  it("searches, deletes, prunes, reindexes and checks", async () => {
    const { home, ids } = await seededHome();
    // The index is built by the first writer; reindex as the operator would.
    expect(tenax(home, ["sessions", "reindex"]).stdout).toMatch(/rebuilt the search index .*: 5 messages/);
    const search = JSON.parse(tenax(home, ["sessions", "search", "platypus", "--json"]).stdout);
    expect(search.hits).toHaveLength(2);
    expect(tenax(home, ["sessions", "search", "wombat"]).stdout).toMatch(/no messages match "wombat"/);

    const deleted = tenax(home, ["sessions", "delete", ids[0] ?? "", "--json"]);
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: ids[0], messages: 2 });
    expect(JSON.parse(tenax(home, ["sessions", "search", "platypus", "--json"]).stdout).hits).toHaveLength(1);

    // Seeded sessions are from January 2026: idle for more than a day. The bad row's time is unusable: kept.
    const dry = JSON.parse(
      tenax(home, ["sessions", "prune", "--older-than", "1", "--dry-run", "--json"]).stdout,
    );
    expect(dry).toEqual({ dry_run: true, sessions: [ids[1]] });
    expect(tenax(home, ["sessions", "prune", "--older-than", "1"]).stdout).toMatch(/deleted 1 session/);
    expect(
      JSON.parse(tenax(home, ["sessions", "list", "--json"]).stdout).sessions.map(
        (s: { id: string }) => s.id,
      ),
    ).toEqual(["s_bad"]);
    expect(tenax(home, ["sessions", "prune"]).status).toBe(2);

    const check = tenax(home, ["sessions", "check", "--json"]);
    expect(check.status).toBe(0);
    expect(JSON.parse(check.stdout).integrity).toMatchObject({ status: "ok", mode: "quick" });
  });

  it("reports unknown ids and bad arguments as usage errors with a command that works", async () => {
    const { home } = await seededHome();
    const missing = tenax(home, ["sessions", "show", "s_nope"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/no session 's_nope'/);
    const [command] = printedCommands(missing.stderr);
    expect(command).toBe("tenax sessions list");
    expect(runPrinted(home, command ?? "").status).toBe(0);
    expect(tenax(home, ["sessions", "list", "--limit", "lots"]).status).toBe(2);
  });

  it("says the store is damaged, with the salvage command, when a read meets a damaged page", async () => {
    const { home } = await seededHome();
    const paths = profilePaths(home, "default");
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "sessions").map((p) => p.pageno),
      "garbage",
      5,
    );
    expect(statSync(paths.state).size % PAGE).toBe(0);
    const list = tenax(home, ["sessions", "list"]);
    expect(list.status).toBe(1);
    expect(list.stderr).not.toMatch(/a bug in Tenax/);
    expect(list.stderr).toMatch(/state\.db is damaged/);
    const [command] = printedCommands(list.stderr);
    expect(command).toBe(`tenax sessions recover --source ${paths.state} --inspect-only`);
    const inspect = runPrinted(home, command ?? "");
    expect(inspect.stdout).toMatch(/sessions +\d+ +\d+ +\d+/);
    expect(inspect.status).toBe(1); // the damaged sessions page held rows that are lost
  });
});

describe("commands printed by sessions errors work as printed", () => {
  it("a damaged search index: search names reindex, which repairs it", async () => {
    const home = tempDir();
    const created = tenax(home, ["profile", "create", "ops"]);
    expect(created.status).toBe(0);
    const paths = profilePaths(home, "ops");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.index.rebuild();
    const id = await store.createSession();
    for (let i = 0; i < 50; i++)
      await store.appendMessage({ session_id: id, role: "user", content: `quokka ${i}` });
    await releaseStore(store);
    garbageAfterHeader(paths.search, 9);
    const search = tenax(home, ["--profile", "ops", "sessions", "search", "quokka"]);
    expect(search.status).toBe(1);
    expect(search.stderr).toMatch(/search is (degraded|unavailable).*transcripts are not affected/);
    const [command] = printedCommands(search.stderr);
    expect(command).toBe("tenax --profile ops sessions reindex");
    expect(runPrinted(home, command ?? "").status).toBe(0);
    const again = tenax(home, [
      "--profile",
      "ops",
      "sessions",
      "search",
      "quokka",
      "--limit",
      "100",
      "--json",
    ]);
    expect(JSON.parse(again.stdout).hits).toHaveLength(50);
  });

  it("list shows what became of each session's last turn: resumed, suspended, failed, ...", async () => {
    const home = tempDir();
    const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
    const cases: Array<[string, { status: string; interrupt_count: number }]> = [
      ["plain", { status: "completed", interrupt_count: 0 }],
      ["resumed", { status: "completed", interrupt_count: 1 }],
      ["resuming", { status: "running", interrupt_count: 2 }],
      ["suspended", { status: "suspended", interrupt_count: 3 }],
      ["failed", { status: "failed", interrupt_count: 0 }],
      ["interrupted", { status: "interrupted", interrupt_count: 1 }],
    ];
    for (const [title, turn] of cases) {
      const id = await store.createSession({ title });
      // An older turn first: only the last one counts.
      await store.updateTurn({ id: await store.startTurn(id, 1000), status: "failed" });
      await store.updateTurn({ id: await store.startTurn(id, 1000), ...turn });
    }
    await store.createSession({ title: "empty" });
    await releaseStore(store);

    const list = tenax(home, ["sessions", "list", "--json"]);
    expect(list.status).toBe(0);
    const sessions = JSON.parse(list.stdout).sessions as Array<{
      title: string;
      last_turn: { state: string; status: string; interrupt_count: number } | null;
    }>;
    const state = Object.fromEntries(sessions.map((s) => [s.title, s.last_turn?.state ?? null]));
    expect(state).toEqual({
      plain: "completed",
      resumed: "resumed",
      resuming: "resumed",
      suspended: "suspended",
      failed: "failed",
      interrupted: "interrupted",
      empty: null,
    });
    expect(sessions.find((s) => s.title === "resuming")?.last_turn).toMatchObject({
      status: "running",
      interrupt_count: 2,
    });

    const text = tenax(home, ["sessions", "list"]).stdout;
    expect(text).toMatch(/LAST TURN/);
    expect(text).toMatch(/resumed \(completed after 1 interruption\)\s+resumed/);
    expect(text).toMatch(/resumed \(running after 2 interruptions\)\s+resuming/);
    expect(text).toMatch(/suspended after 3 interruptions\s+suspended/);
  });

  it("list and show give every session a title: its own, else its first question, else a placeholder", async () => {
    const home = tempDir();
    const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
    // As `tenax chat` makes them: no title of their own.
    const asked = await store.createSession();
    await store.appendMessage({ session_id: asked, role: "user", content: "how do wombats\n  dig burrows?" });
    const empty = await store.createSession({ source: "cli" });
    await releaseStore(store);

    const listed = JSON.parse(tenax(home, ["sessions", "list", "--json"]).stdout).sessions as Array<{
      id: string;
      title: string;
      title_source: string;
    }>;
    expect(listed.map((s) => [s.id, s.title, s.title_source])).toEqual([
      [empty, "cli session (no user message)", "placeholder"],
      [asked, "how do wombats dig burrows?", "first_message"],
    ]);
    expect(tenax(home, ["sessions", "list"]).stdout).toMatch(/\s+how do wombats dig burrows\?\n/);
    expect(tenax(home, ["sessions", "show", asked]).stdout).toMatch(
      new RegExp(`^session ${asked} {2}how do wombats dig burrows\\?$`, "m"),
    );
  });

  it("a missing profile: the printed create command makes it", () => {
    const home = tempDir();
    const missing = tenax(home, ["--profile", "lab", "sessions", "list"]);
    expect(missing.status).toBe(2);
    const commands = printedCommands(missing.stderr);
    expect(commands).toEqual(["tenax profile create lab", "tenax profile list"]);
    for (const command of commands) expect(runPrinted(home, command).status).toBe(0);
    expect(tenax(home, ["--profile", "lab", "sessions", "list"]).stdout).toMatch(/no sessions yet/);
  });
});
