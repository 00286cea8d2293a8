// The checkpoint store against the real git binary in real temp folders: what a snapshot holds,
// what a restore writes and removes, that the project's own .git is never touched, sharing of
// identical content between projects, pruning, and skips.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { TenaxError } from "../core/errors.js";
import { storeLayout } from "./layout.js";
import { CheckpointStore, type Snapshot, type SnapshotResult } from "./store.js";

/** A project folder with these files (relative path → content). */
function project(files: Record<string, string>): string {
  const dir = tempDir("tenax-project-");
  writeFiles(dir, files);
  return dir;
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

function storeIn(home = tempDir("tenax-home-"), options: { maxSnapshots?: number } = {}): CheckpointStore {
  return new CheckpointStore({ home, ...options });
}

function created(result: SnapshotResult): Snapshot {
  if (result.status !== "created") throw new Error(`expected a new snapshot, got ${JSON.stringify(result)}`);
  return result.snapshot;
}

/** git on the store's repository, for looking inside it. */
function storeGit(store: CheckpointStore, args: string[]): string {
  const result = spawnSync("git", args, {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH,
      GIT_DIR: store.layout.repo,
      GIT_CONFIG_NOSYSTEM: "1",
      HOME: store.layout.home,
    },
  });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

function snapshotFiles(store: CheckpointStore, snapshot: Snapshot): string[] {
  return storeGit(store, ["ls-tree", "-r", "--name-only", "-z", snapshot.id]).split("\0").filter(Boolean);
}

function objectCount(store: CheckpointStore, type: string): number {
  const all = storeGit(store, ["cat-file", "--batch-all-objects", "--batch-check=%(objecttype)"]);
  return all.split("\n").filter((line) => line === type).length;
}

/** Every file under `dir` (recursively) with its mode and a hash of its bytes. */
function fingerprint(dir: string): Record<string, string> {
  const result: Record<string, string> = {};
  const visit = (folder: string, prefix: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      const key = `${prefix}${entry.name}`;
      const mode = lstatSync(path).mode.toString(8);
      if (entry.isDirectory()) {
        result[`${key}/`] = mode;
        visit(path, `${key}/`);
      } else if (entry.isSymbolicLink()) result[key] = `${mode} -> ${readlinkSync(path)}`;
      else result[key] = `${mode} ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
    }
  };
  visit(dir, "");
  return result;
}

/** The project's own repository: a real `git init` with one commit. */
function initOwnRepo(dir: string): void {
  const git = (...args: string[]) => {
    const result = spawnSync(
      "git",
      ["-c", "user.name=dev", "-c", "user.email=dev@example.invalid", ...args],
      {
        cwd: dir,
        encoding: "utf8",
      },
    );
    if (result.status !== 0) throw new Error(result.stderr);
  };
  git("init", "-q");
  git("add", "-A");
  git("commit", "-q", "--no-gpg-sign", "-m", "the project's own history");
}

async function rejection(promise: Promise<unknown>): Promise<TenaxError> {
  try {
    await promise;
  } catch (error) {
    if (TenaxError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a TenaxError");
}

describe("CheckpointStore snapshot and restore", () => {
  it("brings back changed, deleted and created files and leaves the project's own .git byte for byte", async () => {
    const dir = project({ "src/app.ts": "old\n", "README.md": "readme\n", "docs/guide.md": "guide\n" });
    initOwnRepo(dir);
    const gitBefore = fingerprint(join(dir, ".git"));
    const store = storeIn();

    const first = created(await store.snapshot(dir, "before write_file src/app.ts"));
    expect(first.files).toBe(3);
    expect(snapshotFiles(store, first).sort()).toEqual(["README.md", "docs/guide.md", "src/app.ts"]);

    writeFileSync(join(dir, "src/app.ts"), "new\n"); // what write_file does
    rmSync(join(dir, "docs"), { recursive: true });
    writeFiles(dir, { "src/extra.ts": "made by the agent\n" });
    expect(await store.diff(dir, first.id)).toMatch(/-old\n\+new\n/);

    const result = await store.restore(dir, first.id);
    expect(readFileSync(join(dir, "src/app.ts"), "utf8")).toBe("old\n");
    expect(readFileSync(join(dir, "docs/guide.md"), "utf8")).toBe("guide\n");
    expect(existsSync(join(dir, "src/extra.ts"))).toBe(false);
    expect(result.restored.id).toBe(first.id);
    expect(result.changes).toEqual(
      expect.arrayContaining([
        { path: "src/app.ts", action: "restored" },
        { path: "docs/guide.md", action: "recreated" },
        { path: "src/extra.ts", action: "removed" },
      ]),
    );
    expect(fingerprint(join(dir, ".git"))).toEqual(gitBefore);
  });

  it("can undo a restore by restoring the safety snapshot it took first", async () => {
    const dir = project({ "a.txt": "v1\n" });
    const store = storeIn();
    const v1 = created(await store.snapshot(dir, "v1"));
    writeFileSync(join(dir, "a.txt"), "v2\n");
    writeFiles(dir, { "b.txt": "only in v2\n" });

    const { safety } = await store.restore(dir, v1.id);
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("v1\n");
    expect(safety).not.toBeNull();
    expect(safety?.reason).toBe(`before restoring ${v1.id}`);
    expect((await store.list(dir))[0]?.id).toBe(safety?.id);

    // `/rollback` again (1 = the latest, which is now the safety snapshot) is the undo.
    const undo = await store.restore(dir, "1");
    expect(undo.restored.id).toBe(safety?.id);
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("v2\n");
    expect(readFileSync(join(dir, "b.txt"), "utf8")).toBe("only in v2\n");
  });

  it("restores file modes, symlinks, and a file that became a folder", async () => {
    const dir = project({ "run.sh": "#!/bin/sh\necho hi\n", config: "plain file\n" });
    chmodSync(join(dir, "run.sh"), 0o755);
    symlinkSync("run.sh", join(dir, "latest"));
    const store = storeIn();
    const before = fingerprint(dir);
    const snap = created(await store.snapshot(dir, "modes"));

    chmodSync(join(dir, "run.sh"), 0o644);
    rmSync(join(dir, "latest"));
    symlinkSync("/etc/hostname", join(dir, "latest"));
    rmSync(join(dir, "config"));
    writeFiles(dir, { "config/inner.yaml": "now a folder\n" });

    await store.restore(dir, snap.id);
    expect(fingerprint(dir)).toEqual(before);
  });

  it("recreates a project folder that was deleted", async () => {
    const parent = tempDir("tenax-parent-");
    const dir = join(parent, "work");
    writeFiles(dir, { "main.py": "print('hi')\n", "pkg/mod.py": "x = 1\n" });
    const store = storeIn();
    const snap = created(await store.snapshot(dir, "before"));
    rmSync(dir, { recursive: true });

    expect((await store.list(dir)).map((s) => s.id)).toEqual([snap.id]);
    await store.restore(dir, snap.id);
    expect(readFileSync(join(dir, "pkg/mod.py"), "utf8")).toBe("x = 1\n");
  });

  it("answers unchanged, with no new commit, when nothing changed since the last snapshot", async () => {
    const dir = project({ "a.txt": "same\n" });
    const store = storeIn();
    const first = created(await store.snapshot(dir, "one"));
    const again = await store.snapshot(join(dir, "."), "two");
    expect(again).toMatchObject({ status: "unchanged", snapshot: { id: first.id, reason: "one" } });
    expect(await store.list(dir)).toHaveLength(1);
    expect(objectCount(store, "commit")).toBe(1);
  });

  it("lists newest first with reason, time and file count, and finds by number or id prefix", async () => {
    let now = 1_700_000_000_000;
    const dir = project({ "a.txt": "1" });
    const store = new CheckpointStore({ home: tempDir(), clock: { now: () => now } });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      writeFileSync(join(dir, "a.txt"), String(n));
      writeFiles(dir, { [`f${n}.txt`]: "x" });
      ids.push(created(await store.snapshot(dir, `turn ${n}`)).id);
      now += 60_000;
    }
    const list = await store.list(dir);
    expect(list.map((s) => [s.id, s.reason, s.files, s.created_at])).toEqual([
      [ids[2], "turn 3", 4, 1_700_000_120_000],
      [ids[1], "turn 2", 3, 1_700_000_060_000],
      [ids[0], "turn 1", 2, 1_700_000_000_000],
    ]);
    expect((await store.find(dir, "1")).id).toBe(ids[2]);
    expect((await store.find(dir, "3")).reason).toBe("turn 1");
    expect((await store.find(dir, ids[1]?.slice(0, 7) ?? "")).reason).toBe("turn 2");

    const unknown = await rejection(store.find(dir, "4"));
    expect(unknown.exitCode).toBe(2);
    expect(unknown.message).toContain('no checkpoint "4"');
    expect(unknown.hint).toContain(`tenax checkpoints list --project ${list[0]?.project}`);
    const none = await rejection(store.restore(project({}), "1"));
    expect(none.message).toContain("no checkpoints of");
  });
  it("serializes snapshots of one project from several stores (processes) sharing the folder", async () => {
    const home = tempDir();
    const dir = project({ "a.txt": "1" });
    const stores = [storeIn(home), storeIn(home), storeIn(home)];
    const results = await Promise.all(stores.map((store, i) => store.snapshot(dir, `process ${i}`)));
    expect(results.filter((r) => r.status === "created")).toHaveLength(1);
    expect(results.filter((r) => r.status === "unchanged")).toHaveLength(2);
    expect(await stores[0]?.list(dir)).toHaveLength(1);
  });

  it("diffs a deleted project folder as everything removed", async () => {
    const parent = tempDir();
    const dir = join(parent, "gone");
    writeFiles(dir, { "x.txt": "was here\n" });
    const store = storeIn();
    const snap = created(await store.snapshot(dir, "before"));
    rmSync(dir, { recursive: true });
    expect(await store.diff(dir, snap.id)).toContain("deleted file mode 100644");
  });
});

describe("CheckpointStore storage", () => {
  it("stores identical content once across projects", async () => {
    const files = { "one.txt": "shared one\n", "two.txt": "shared two\n", "lib/three.txt": "shared three\n" };
    const store = storeIn();
    created(await store.snapshot(project(files), "a"));
    created(await store.snapshot(project(files), "b"));
    expect(objectCount(store, "blob")).toBe(3);
    expect(objectCount(store, "tree")).toBe(2); // the root tree and lib/, both shared
    expect(objectCount(store, "commit")).toBe(2);
  });

  it("keeps at most maxSnapshots per project, and gc drops only what no project still needs", async () => {
    const home = tempDir();
    const store = storeIn(home, { maxSnapshots: 3 });
    const dir = project({ "shared.txt": "in both projects\n", "own.txt": "version 0\n" });
    const other = project({ "shared.txt": "in both projects\n" });
    const otherSnap = created(await store.snapshot(other, "other project"));
    for (let n = 0; n < 6; n++) {
      writeFileSync(join(dir, "own.txt"), `version ${n}\n`);
      created(await store.snapshot(dir, `v${n}`));
    }
    expect((await store.list(dir)).map((s) => s.reason)).toEqual(["v5", "v4", "v3"]);
    expect((await store.list(other)).map((s) => s.id)).toEqual([otherSnap.id]);

    const blobOf = (text: string) =>
      spawnSync("git", ["hash-object", "--stdin"], { input: text, encoding: "utf8" }).stdout.trim();
    const exists = (text: string) =>
      spawnSync("git", ["cat-file", "-e", blobOf(text)], {
        env: { PATH: process.env.PATH, GIT_DIR: store.layout.repo },
      }).status === 0;
    expect(exists("version 0\n")).toBe(true); // pruned, but not collected yet

    await store.collectGarbage("now");
    expect(exists("version 0\n")).toBe(false);
    expect(exists("version 3\n")).toBe(true);
    expect(exists("in both projects\n")).toBe(true);
    rmSync(join(other, "shared.txt"));
    await store.restore(other, otherSnap.id);
    expect(readFileSync(join(other, "shared.txt"), "utf8")).toBe("in both projects\n");
  });

  it("keeps the store under TENAX_HOME/checkpoints/store and never snapshots TENAX_HOME itself", async () => {
    const dir = project({ "notes.md": "hi\n" });
    const home = join(dir, ".tenax");
    mkdirSync(home);
    writeFileSync(join(home, "state.db"), "not to be rolled back");
    const store = storeIn(home);
    expect(store.layout).toEqual(storeLayout(home));
    expect(store.layout.root).toBe(join(home, "checkpoints", "store"));
    const snap = created(await store.snapshot(dir, "home inside the project"));
    expect(snapshotFiles(store, snap)).toEqual(["notes.md"]);
    expect(await store.snapshot(store.layout.root, "the store")).toMatchObject({ status: "skipped" });
    const ofHome = created(await store.snapshot(home, "TENAX_HOME itself"));
    expect(snapshotFiles(store, ofHome)).toEqual(["state.db"]);
  });
});

describe("CheckpointStore skips", () => {
  it("never puts secrets in a snapshot and never touches them on restore", async () => {
    const dir = project({
      "app.js": "v1",
      ".env": "API_KEY=sk-live-1",
      ".env.production": "DB_PASSWORD=x",
      "certs/server.pem": "-----BEGIN PRIVATE KEY-----",
      "keys/id_ed25519": "private",
      "config/.npmrc": "//registry.npmjs.org/:_authToken=t",
    });
    const store = storeIn();
    const result = await store.snapshot(dir, "secrets");
    const snap = created(result);
    expect(snapshotFiles(store, snap)).toEqual(["app.js"]);
    expect(result.status === "created" && result.excluded?.map((e) => [e.path, e.kind])).toEqual(
      expect.arrayContaining([
        [".env", "secret"],
        [".env.production", "secret"],
        ["certs/server.pem", "secret"],
        ["keys/id_ed25519", "secret"],
      ]),
    );
    const stored = storeGit(store, ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]);
    for (const line of stored.split("\n").filter(Boolean)) {
      expect(storeGit(store, ["cat-file", "-p", line])).not.toContain("sk-live-1");
    }

    writeFileSync(join(dir, ".env"), "API_KEY=sk-live-2");
    writeFileSync(join(dir, "app.js"), "v2");
    await store.restore(dir, snap.id);
    expect(readFileSync(join(dir, "app.js"), "utf8")).toBe("v1");
    expect(readFileSync(join(dir, ".env"), "utf8")).toBe("API_KEY=sk-live-2");
    expect(existsSync(join(dir, "keys/id_ed25519"))).toBe(true);
  });

  it("leaves dependency and build folders out, and a restore leaves them as they are", async () => {
    const dir = project({
      "package.json": "{}",
      "node_modules/left-pad/index.js": "module.exports = 1",
      "dist/app.js": "built",
      "py/__pycache__/m.cpython-312.pyc": "bytecode",
      "build.sh": "a file named like a folder is kept",
    });
    const store = storeIn();
    const snap = created(await store.snapshot(dir, "deps"));
    expect(snapshotFiles(store, snap).sort()).toEqual(["build.sh", "package.json"]);

    writeFiles(dir, { "node_modules/new-dep/index.js": "installed later", "dist/app.js": "rebuilt" });
    await store.restore(dir, snap.id);
    expect(readFileSync(join(dir, "node_modules/new-dep/index.js"), "utf8")).toBe("installed later");
    expect(readFileSync(join(dir, "dist/app.js"), "utf8")).toBe("rebuilt");
  });

  it("skips a tree over the file or byte limit with a message, and refuses to restore into one", async () => {
    const files: Record<string, string> = { "small.txt": "x" };
    for (let n = 0; n < 30; n++) files[`data/part-${n}.csv`] = "1,2,3\n";
    const dir = project(files);
    const store = new CheckpointStore({ home: tempDir(), maxFiles: 20 });
    const result = await store.snapshot(dir, "huge");
    expect(result.status).toBe("skipped");
    expect(result.status === "skipped" && result.why).toMatch(
      /too big to snapshot: more than 20 files.*under data/,
    );
    expect(await store.list(dir)).toEqual([]);

    const byBytes = new CheckpointStore({ home: tempDir(), maxBytes: 1000 });
    writeFiles(dir, { "big.bin": "x".repeat(2000) });
    const skipped = await byBytes.snapshot(dir, "bytes");
    expect(skipped.status === "skipped" && skipped.why).toContain("more than 1000 bytes");

    const small = project({ "a.txt": "1" });
    const limited = new CheckpointStore({ home: tempDir(), maxFiles: 2 });
    const snap = created(await limited.snapshot(small, "small"));
    writeFiles(small, { "b.txt": "2", "c.txt": "3" });
    const refused = await rejection(limited.restore(small, snap.id));
    expect(refused.message).toContain("nothing was restored");
    expect(existsSync(join(small, "c.txt"))).toBe(true);
  });

  it("skips what is not a folder, and reports a missing git as such", async () => {
    const dir = project({ "file.txt": "x" });
    const store = storeIn();
    expect(await store.snapshot(join(dir, "file.txt"), "a file")).toMatchObject({
      status: "skipped",
      why: expect.stringContaining("is not a folder"),
    });
    expect(await store.snapshot(join(dir, "missing"), "gone")).toMatchObject({
      status: "skipped",
      why: expect.stringContaining("does not exist"),
    });
    const noGit = new CheckpointStore({ home: tempDir(), git: join(dir, "no-such-git") });
    const error = await rejection(noGit.list(dir));
    expect(error.code).toBe("checkpoint_git_missing");
    expect(error.hint).toContain("install git");
  });
});
