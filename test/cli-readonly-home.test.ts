// A home Tenax cannot write to, for real: as root (CI) a tmpfs remounted read-only, which even
// root cannot write; as another user, folders without write permission. Every command says what
// is wrong and what to do, never "a bug", and nothing is half-written.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild, tenax } from "./helpers/cli.js";

const asRoot = process.getuid?.() === 0;
let base = "";

beforeAll(async () => {
  requireBuild();
  base = mkdtempSync(join(tmpdir(), "tenax-ro-"));
  if (asRoot) execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", base]);
  // One profile with a store and one empty home, made while the folder is still writable.
  const paths = profilePaths(join(base, "with-store"), "default");
  mkdirSync(paths.dir, { recursive: true });
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const id = await store.createSession({ title: "kept" });
  await store.appendMessage({ session_id: id, role: "user", content: "still here" });
  await releaseStore(store);
  mkdirSync(join(base, "empty"));
  if (asRoot) execFileSync("mount", ["-o", "remount,ro", base]);
  else for (const dir of [paths.dir, join(base, "empty")]) chmodSync(dir, 0o555);
});

afterAll(() => {
  if (!base) return;
  if (asRoot) execFileSync("umount", [base]);
  else for (const dir of [join(base, "with-store"), join(base, "empty")]) chmodSync(dir, 0o755);
  rmSync(base, { recursive: true, force: true });
});

describe("a home Tenax cannot write to", () => {
  it("init says it cannot write there and what to do, and leaves nothing behind", () => {
    const home = join(base, "empty");
    const run = tenax(home, ["init"]);
    expect(run.status).toBe(1);
    expect(run.stderr).not.toMatch(/a bug in Tenax/);
    expect(run.stderr).toMatch(/cannot write .*config\.yaml: .*(read-only file system|permission denied)/);
    expect(run.stderr).toMatch(/TENAX_HOME/);
    expect(readdirSync(home)).toEqual([]);
  });

  it("commands that write to the store say whose files they are, never 'a bug'", () => {
    const home = join(base, "with-store");
    const before = readdirSync(home).sort();
    const run = tenax(home, ["sessions", "reindex"]);
    expect(run.status).toBe(1);
    expect(run.stderr).not.toMatch(/a bug in Tenax/);
    expect(run.stderr).toMatch(/cannot use the session store .*state\.db/);
    expect(run.stderr).toMatch(/ls -la /);
    expect(readdirSync(home).sort()).toEqual(before);
    expect(existsSync(join(home, "spool"))).toBe(false);
  });
});
