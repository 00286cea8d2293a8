// `tenax checkpoints list|diff|restore` as a user runs it: the built CLI in a child process, on a
// snapshot the agent's API took, with the real git.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CheckpointStore, type Snapshot } from "../src/checkpoints/store.js";
import {
  BIN,
  cliEnvironment,
  printedCommands,
  type Run,
  requireBuild,
  runPrinted,
  tenax,
} from "./helpers/cli.js";
import { tempHome } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(requireBuild);

function projectWithRepo(files: Record<string, string>): string {
  const dir = tempDir("tenax-project-");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const git = (...args: string[]) =>
    spawnSync("git", ["-c", "user.name=dev", "-c", "user.email=dev@example.invalid", ...args], { cwd: dir });
  git("init", "-q");
  git("add", "-A");
  git("commit", "-q", "--no-gpg-sign", "-m", "own history");
  return dir;
}

/** sha256 of every file under `dir`, by relative path. */
function hashes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length)] = createHash("sha256").update(readFileSync(path)).digest("hex");
  }
  return out;
}

async function snapshotOf(home: string, dir: string, reason: string): Promise<Snapshot> {
  const result = await new CheckpointStore({ home }).snapshot(dir, reason);
  if (result.status !== "created") throw new Error(JSON.stringify(result));
  return result.snapshot;
}

function runIn(cwd: string, home: string, args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...cliEnvironment(home), ...env },
    encoding: "utf8",
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("tenax checkpoints", () => {
  it("lists, diffs and restores, the printed undo command works, and the project's .git stays as it was", async () => {
    const home = tempHome();
    const dir = projectWithRepo({ "src/main.ts": "export const v = 1;\n", "notes.md": "notes\n" });
    const ownGit = hashes(join(dir, ".git"));
    const snap = await snapshotOf(home, dir, "before write_file src/main.ts");
    writeFileSync(join(dir, "src/main.ts"), "export const v = 2;\n");
    writeFileSync(join(dir, "new.txt"), "created by the agent\n");

    const list = tenax(home, ["checkpoints", "list", "--project", dir, "--json"]);
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({
      project: dir,
      checkpoints: [{ n: 1, id: snap.id, reason: "before write_file src/main.ts", files: 2 }],
    });
    const table = tenax(home, ["checkpoints", "list", "--project", dir]);
    expect(table.stdout).toMatch(
      new RegExp(`1\\s+${snap.id}\\s+\\d{4}-\\d\\d-\\d\\d [\\d:]+\\s+2\\s+before write_file`),
    );

    const diff = tenax(home, ["checkpoints", "diff", snap.id.slice(0, 6), "--project", dir]);
    expect(diff.status).toBe(0);
    expect(diff.stdout).toContain("-export const v = 1;\n+export const v = 2;\n");
    expect(diff.stdout).toContain("+++ b/new.txt");

    const restore = tenax(home, ["checkpoints", "restore", "1", "--project", dir]);
    expect(restore.status).toBe(0);
    expect(readFileSync(join(dir, "src/main.ts"), "utf8")).toBe("export const v = 1;\n");
    expect(() => readFileSync(join(dir, "new.txt"))).toThrow();
    expect(restore.stdout).toContain("1 restored, 0 recreated, 1 removed");
    expect(hashes(join(dir, ".git"))).toEqual(ownGit);

    const [undo] = printedCommands(restore.stdout);
    expect(undo).toMatch(/^tenax checkpoints restore [0-9a-f]{12} --project /);
    expect(runPrinted(home, undo ?? "").status).toBe(0);
    expect(readFileSync(join(dir, "src/main.ts"), "utf8")).toBe("export const v = 2;\n");
    expect(readFileSync(join(dir, "new.txt"), "utf8")).toBe("created by the agent\n");
    expect(hashes(join(dir, ".git"))).toEqual(ownGit);
  });

  it("takes the current folder as the project and prints JSON for restore", async () => {
    const home = tempHome();
    const dir = projectWithRepo({ "a.txt": "before\n" });
    const snap = await snapshotOf(home, dir, "turn 1");
    writeFileSync(join(dir, "a.txt"), "after\n");
    const list = runIn(dir, home, ["checkpoints", "list", "--json"]);
    expect(JSON.parse(list.stdout).checkpoints.map((s: Snapshot) => s.id)).toEqual([snap.id]);
    const restored = runIn(dir, home, ["checkpoints", "restore", "--json"]);
    expect(restored.status).toBe(0);
    const doc = JSON.parse(restored.stdout);
    expect(doc).toMatchObject({
      restored: { id: snap.id },
      changes: [{ path: "a.txt", action: "restored" }],
    });
    expect(doc.safety.reason).toBe(`before restoring ${snap.id}`);
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("before\n");
  });

  it("rejects an unknown id or a file with exit 2 and a command that helps", async () => {
    const home = tempHome();
    const dir = projectWithRepo({ "a.txt": "x\n" });
    await snapshotOf(home, dir, "only one");
    const unknown = tenax(home, ["checkpoints", "restore", "deadbeef", "--project", dir]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('no checkpoint "deadbeef"');
    const command = /see them with: (tenax .*)$/m.exec(unknown.stderr)?.[1];
    expect(command).toBeDefined();
    const listed = runPrinted(home, command ?? "");
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain("only one");

    const file = tenax(home, ["checkpoints", "diff", "--project", join(dir, "a.txt"), "--json"]);
    expect(file.status).toBe(2);
    expect(JSON.parse(file.stdout).error.message).toContain("is not a folder");

    const none = tenax(home, ["checkpoints", "list", "--project", tempDir()]);
    expect(none.status).toBe(0);
    expect(none.stdout).toContain("no checkpoints of");
  });

  it("says git is missing, with exit 1, when it is not on PATH", () => {
    const home = tempHome();
    const result = runIn(tempDir(), home, ["checkpoints", "list"], { PATH: tempDir() });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("checkpoints need git");
    expect(result.stderr).toContain("install git");
  });
});
