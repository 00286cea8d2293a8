// The salvage commands through the real CLI (built code: `npm run build` first), on a throwaway
// TENAX_HOME whose path has a space in it: every next-command the CLI prints is run exactly as
// printed, through a shell, until the profile works again.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { profilePaths } from "../src/profile/paths.js";
import { releaseStore } from "../src/store/registry.js";
import { checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir } from "./helpers/tmp.js";
import { buildStore, digests, pageMap, recordsIn, writeRecords } from "./recover-fixtures.js";

const ROOT = resolve(import.meta.dirname, "..");
const BIN = join(ROOT, "bin", "tenax.js");

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function env(home: string): NodeJS.ProcessEnv {
  const vars: NodeJS.ProcessEnv = { ...process.env, TENAX_HOME: home, HOME: home };
  delete vars.TENAX_PROFILE;
  return vars;
}

function tenax(home: string, args: string[]): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(home), encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Run a printed command line through a shell, with `tenax` meaning this CLI. */
function shell(home: string, command: string): Run {
  const script = `tenax() { "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  const r = spawnSync("sh", ["-c", script], { cwd: tempDir(), env: env(home), encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const lastLine = (text: string) => text.trimEnd().split("\n").pop() ?? "";

beforeAll(() => {
  if (!existsSync(join(ROOT, "dist", "cli", "main.js")))
    throw new Error("dist/ is missing: run `npm run build` first");
});

describe("tenax sessions recover / restore", () => {
  it("walks a damaged profile back to health by running each printed next command", async () => {
    const home = join(tempDir(), "my home");
    mkdirSync(home);
    expect(tenax(home, ["profile", "create", "work"]).status).toBe(0);
    const paths = profilePaths(home, "work");
    const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 120, seed: 21 });
    await writeRecords(store, written.sessions, { seed: 21, notes: 12, runEvents: 6 });
    await releaseStore(store);
    checkpoint(paths.state);
    const records = recordsIn(paths.state).size;
    const leaf = [...pageMap(paths.state, "messages").leaves.keys()][2] ?? 0;
    overwritePages(paths.state, [leaf], "garbage", 21);
    const before = digests(paths.state);

    const inspect = tenax(home, [
      "--profile",
      "work",
      "sessions",
      "recover",
      "--source",
      paths.state,
      "--inspect-only",
    ]);
    expect(inspect.status).toBe(1);
    expect(inspect.stdout).toMatch(/LOST: \d+ messages could not be salvaged/);
    // The records table is counted like the others: every memory note, todo list and run event found.
    expect(records).toBe(12 + 2 * 3 + 1 + 6 + 2);
    expect(inspect.stdout).toMatch(new RegExp(`^records\\s+${records}\\s+${records}\\s+0$`, "m"));
    const toOutput = lastLine(inspect.stdout);
    expect(toOutput).toMatch(
      /^tenax --profile work sessions recover --source '.*my home.*state\.db' --output '.*'$/,
    );

    const recover = shell(home, toOutput);
    expect(recover.status).toBe(1);
    expect(recover.stdout).toContain("stop every Tenax process of this profile first");
    expect(digests(paths.state)).toEqual(before);
    const toRestore = lastLine(recover.stdout);
    expect(toRestore).toMatch(/^tenax --profile work sessions restore --from '.*\.db'$/);

    const restore = shell(home, toRestore);
    expect(restore.stderr).toBe("");
    expect(restore.status).toBe(0);
    const list = shell(home, lastLine(restore.stdout));
    expect(list.status).toBe(0);
    expect(recordsIn(paths.state).size).toBe(records);
    const json = tenax(home, ["--profile", "work", "sessions", "list", "--json"]);
    const sessions = (JSON.parse(json.stdout) as { sessions: { id: string; message_count: number }[] })
      .sessions;
    expect(sessions.map((s) => s.id).sort()).toEqual([...written.sessions].sort());
    const total = sessions.reduce((n, s) => n + s.message_count, 0);
    expect(total).toBeLessThan(written.messages.length);
    expect(total).toBeGreaterThan(written.messages.length - 60);
    // Restore rebuilt the search index: a reader finds every surviving message at once.
    expect(restore.stdout).toMatch(new RegExp(`search index rebuilt: ${total} messages`));
  });

  it("exits 2 with a working example on a usage error, and 0 for a healthy store", async () => {
    const home = tempDir();
    const paths = profilePaths(home, "default");
    const { store } = await buildStore(paths, { sessions: 1, messagesPerSession: 10, seed: 2 });
    await releaseStore(store);
    for (const args of [
      [],
      ["--source", paths.state],
      ["--source", paths.state, "--inspect-only", "--output", "x.db"],
    ]) {
      const r = tenax(home, ["sessions", "recover", ...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/for example: tenax sessions recover --source \S+ --inspect-only/);
    }
    const usage = tenax(home, ["sessions", "recover", "--source", paths.state]);
    const example = /for example: (tenax .*)$/m.exec(usage.stderr)?.[1] ?? "";
    const healthy = shell(home, example);
    expect(healthy.status).toBe(0);
    expect(healthy.stdout).toContain("nothing lost");
    const json = tenax(home, ["sessions", "recover", "--source", paths.state, "--inspect-only", "--json"]);
    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      report: { complete: boolean; tables: Record<string, unknown> };
      next_command: string;
    };
    expect(doc.report.complete).toBe(true);
    expect(doc.report.tables.records).toEqual({
      found: 0,
      salvaged: 0,
      lost: 0,
      lost_is_lower_bound: false,
      from_sql: 0,
      from_pages: 0,
      lost_rowids: [],
      lost_keys: [],
    });
    expect(doc.next_command).toMatch(/^tenax sessions recover --source \S+ --output \S+$/);
    const restore = tenax(home, ["sessions", "restore"]);
    expect(restore.status).toBe(2);
    expect(restore.stderr).toContain(
      `recover the store first: tenax sessions recover --source ${paths.state}`,
    );
  });
});
