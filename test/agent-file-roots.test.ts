// The file tools' boundary through real agent turns: a model scripted (by the simulator, over real
// HTTP) to read /etc/shadow or the profile's .env, or to write outside the working folder by an
// absolute path, by ../ or through a symlinked folder, gets a refusal it can read; nothing secret
// reaches the model or the store, and nothing is written outside.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { setupAgent } from "./helpers/agent.js";
import { tempDir } from "./helpers/tmp.js";

type Call = { name: string; arguments: Record<string, unknown> };

/** A tool result as the model reads it: its error's words when it failed, else its JSON. */
function resultText(content: unknown): string {
  const text = typeof content === "string" ? content : JSON.stringify(content);
  const parsed = JSON.parse(text) as { error?: string };
  return parsed.error ?? text;
}

/** Runs one turn whose model makes `calls` at once, then replies; returns each tool result's text. */
async function turnWith(calls: Call[], extra: Record<string, unknown> = {}, cwdOf = (p: string) => p) {
  const setup = await setupAgent(extra);
  const cwd = cwdOf(setup.project);
  setup.sim.script([
    { type: "tool_calls", calls },
    { type: "reply", text: "done" },
  ]);
  const result = await setup.agent.turn({ sessionId: setup.session, text: "go", cwd });
  expect(result.status).toBe("completed");
  const results = (await setup.store.getMessages(setup.session))
    .filter((m) => m.role === "tool")
    .map((m) => resultText(m.content));
  // What the model was sent after the tools ran.
  const sent = JSON.stringify(setup.sim.requests()[1]?.body);
  return {
    ...setup,
    cwd,
    results,
    sent,
    stored: JSON.stringify(await setup.store.getMessages(setup.session)),
  };
}

/** A line of /etc/shadow as the test (root) reads it, or null where this user cannot. */
function shadowLine(): string | null {
  try {
    return readFileSync("/etc/shadow", "utf8").split("\n")[0] || null;
  } catch {
    return null;
  }
}

describe("the file tools' roots, through an agent turn", () => {
  it("refuses /etc/shadow, even in full mode, and none of it reaches the model or the store", async () => {
    for (const mode of ["roots", "full"]) {
      const run = await turnWith(
        [
          { name: "read_file", arguments: { path: "/etc/shadow" } },
          { name: "search_files", arguments: { pattern: "root", path: "/etc/shadow" } },
        ],
        { tools: { files: { mode } } },
      );
      expect(run.results).toHaveLength(2);
      for (const text of run.results) {
        expect(text).toContain(`"/etc/shadow" is the system's password hashes, a secret file`);
        expect(text).toContain("tools.files.roots");
      }
      const line = shadowLine();
      if (line !== null) {
        expect(run.sent).not.toContain(line);
        expect(run.stored).not.toContain(line);
      }
    }
  });

  it("refuses the profile's .env and config.yaml, from its own folder and with a root holding it; no key leaks", async () => {
    const key = `zq8Hk2${randomBytes(16).toString("hex")}`;
    const backup = `bk9Rw3${randomBytes(16).toString("hex")}`;
    // The working folder is the profile folder itself, and a root holds the profile folder too.
    const setup = await setupAgent({ tools: { files: { roots: [realpathSync(tmpdir())] } } });
    // Written once the agent exists, so the redactor does not know these keys: a read would show
    // them in the clear.
    writeFileSync(setup.paths.env, `MAIN_KEY=${key}\nBACKUP_KEY=${backup}\n`);
    setup.sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "read_file", arguments: { path: ".env" } },
          { name: "read_file", arguments: { path: setup.paths.env } },
          { name: "search_files", arguments: { pattern: "KEY" } },
          { name: "patch", arguments: { path: ".env", old_string: "MAIN_KEY", new_string: "X" } },
          { name: "read_file", arguments: { path: "config.yaml" } },
        ],
      },
      { type: "reply", text: "done" },
    ]);
    const result = await setup.agent.turn({ sessionId: setup.session, text: "go", cwd: setup.paths.dir });
    expect(result.status).toBe("completed");
    const results = (await setup.store.getMessages(setup.session)).filter((m) => m.role === "tool");
    const texts = results.map((m) => resultText(m.content));
    expect(texts).toHaveLength(5);
    expect(texts[0]).toContain(
      "is a Tenax profile's .env (it holds the provider and gateway keys), a secret file",
    );
    expect(texts[1]).toContain("a secret file");
    // The search walks the profile folder but skips its .env, config.yaml and store.
    expect(texts[2]).toContain('"matches":[]');
    expect(texts[3]).toContain("a secret file");
    expect(texts[4]).toContain("is a Tenax profile's config.yaml, a secret file");
    expect(readFileSync(setup.paths.env, "utf8")).toContain(`MAIN_KEY=${key}`);
    const everything =
      JSON.stringify(setup.sim.requests()) + JSON.stringify(await setup.store.getMessages(setup.session));
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(backup);
  });

  it("writes nothing outside the working folder: not by absolute path, ../ or a symlinked folder", async () => {
    // The working folder is a folder inside the project, so ../ lands in a temp folder of the test.
    const outside = tempDir();
    writeFileSync(join(outside, "kept.txt"), "original\n");
    let cwd = "";
    const run = await turnWith(
      [
        { name: "write_file", arguments: { path: join(outside, "absolute.txt"), content: "rce\n" } },
        { name: "write_file", arguments: { path: "../dotdot.txt", content: "rce\n" } },
        { name: "write_file", arguments: { path: "out/via-link.txt", content: "rce\n" } },
        { name: "patch", arguments: { path: "out/kept.txt", old_string: "original", new_string: "rce" } },
        { name: "write_file", arguments: { path: "inside.txt", content: "fine\n" } },
      ],
      {},
      (project) => {
        cwd = join(project, "work");
        mkdirSync(cwd);
        symlinkSync(outside, join(cwd, "out"));
        return cwd;
      },
    );
    expect(run.results).toHaveLength(5);
    expect(run.results[0]).toContain(
      `"${join(outside, "absolute.txt")}" is outside the working folder ${cwd} and tools.files.roots; ` +
        `add ${join(outside, "absolute.txt")} (or a folder holding it) to tools.files.roots in config.yaml, ` +
        "or set tools.files.mode: full",
    );
    expect(run.results[1]).toContain(`"../dotdot.txt" (${join(run.project, "dotdot.txt")}) is outside`);
    expect(run.results[2]).toContain(`leads to ${join(outside, "via-link.txt")}, which is outside`);
    expect(run.results[3]).toContain(`leads to ${join(outside, "kept.txt")}, which is outside`);
    expect(existsSync(join(outside, "absolute.txt"))).toBe(false);
    expect(existsSync(join(run.project, "dotdot.txt"))).toBe(false);
    expect(existsSync(join(outside, "via-link.txt"))).toBe(false);
    expect(readFileSync(join(outside, "kept.txt"), "utf8")).toBe("original\n");
    // Inside, the tools work as before.
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("fine\n");
  });

  it("writes outside once tools.files.roots holds the folder, or tools.files.mode is full", async () => {
    const outside = tempDir();
    const rooted = await turnWith(
      [{ name: "write_file", arguments: { path: join(outside, "rooted.txt"), content: "ok\n" } }],
      { tools: { files: { roots: [outside] } } },
    );
    expect(rooted.results[0]).toContain("bytes_written");
    expect(readFileSync(join(outside, "rooted.txt"), "utf8")).toBe("ok\n");
    const full = await turnWith(
      [
        { name: "write_file", arguments: { path: join(outside, "full.txt"), content: "ok\n" } },
        { name: "read_file", arguments: { path: "/etc/passwd" } },
      ],
      { tools: { files: { mode: "full" } } },
    );
    expect(full.results[0]).toContain("bytes_written");
    expect(full.results[1]).toContain("root:");
    expect(readFileSync(join(outside, "full.txt"), "utf8")).toBe("ok\n");
  });
});
