// Temporary homes and profiles for tests: never the user's real ~/.tenax.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { type ProfilePaths, profilePaths } from "../../src/profile/paths.js";

const made: string[] = [];
const beforeRemoval: (() => Promise<void> | void)[] = [];

/**
 * Run `fn` after each test, before its folders are removed: a helper whose processes write into
 * them (a gateway's WAL, its spool) ends them here, so removal never races a live writer.
 */
export function beforeTempRemoval(fn: () => Promise<void> | void): void {
  beforeRemoval.push(fn);
}

afterEach(async () => {
  for (const fn of beforeRemoval) await fn();
  if (process.env.TENAX_KEEP_TMP) return;
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
});

export function tempDir(prefix = "tenax-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/**
 * A temp folder that outlives the test that made it (a file's shared gateway lives in one):
 * `remove` deletes it, once whatever writes into it has ended.
 */
export function lastingTempDir(prefix = "tenax-test-"): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    remove: () => {
      if (!process.env.TENAX_KEEP_TMP) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

export function tempProfile(name = "default"): ProfilePaths {
  return profilePaths(tempDir(), name);
}
