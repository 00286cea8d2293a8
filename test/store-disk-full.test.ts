// A full disk, for real: the profile lives on a tiny tmpfs. A write that does not fit is refused
// with a clear error (never half-written), the store stays usable, and writes work again once
// space is freed. Needs root for mount; CI runs as root.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profilePaths } from "../src/profile/paths.js";
import { StoreDiskFullError } from "../src/store/errors.js";
import { openReader, openStore, releaseStore } from "../src/store/registry.js";
import { readSpool } from "../src/store/spool.js";

let mountPoint = "";

beforeAll(() => {
  // Not a tempDir(): those are removed after each test, and this one is still mounted then.
  mountPoint = mkdtempSync(join(tmpdir(), "tenax-tmpfs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]);
});

afterAll(() => {
  if (!mountPoint) return;
  execFileSync("umount", [mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

describe("a full disk", () => {
  it("refuses the write with a clear error, loses nothing acknowledged, and recovers when space is freed", async () => {
    const home = join(mountPoint, "home");
    mkdirSync(home);
    const paths = profilePaths(home, "default");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession();
    const acked: string[] = [];
    let error: unknown;
    // Fill the disk from outside, then keep writing until the store is refused space.
    const filler = join(mountPoint, "filler");
    try {
      writeFileSync(filler, Buffer.alloc(700 * 1024));
    } catch {
      // the filler itself may not fit entirely; what did fit is enough
    }
    for (let i = 0; i < 2000 && error === undefined; i++) {
      try {
        const m = await store.appendMessage({
          session_id: session,
          role: "user",
          content: `m${i} ${"x".repeat(2000)}`,
        });
        acked.push(String(m.seq));
      } catch (e) {
        error = e;
      }
    }
    expect(error).toBeInstanceOf(StoreDiskFullError);
    expect((error as StoreDiskFullError).message).toMatch(/disk holding .*state\.db is full/);
    expect((error as StoreDiskFullError).hint).toMatch(/free some space/);
    expect((error as StoreDiskFullError).message).toMatch(/the write was NOT stored/);
    expect((error as StoreDiskFullError).hint).toBe(
      `free some space on that disk (df -h ${home}), then retry`,
    );
    // A refused write is refused, not half-kept somewhere for a later surprise.
    expect(readSpool(paths.spool).records).toEqual([]);
    expect(acked.length).toBeGreaterThan(0);
    // Not sticky: free the space and the same store takes writes again.
    rmSync(filler, { force: true });
    await store.appendMessage({ session_id: session, role: "user", content: "after freeing space" });
    expect(store.health()).toMatchObject({ writable: true, corrupt: null });
    await releaseStore(store);
    const reader = openReader(paths);
    const messages = await reader.getMessages(session);
    reader.close();
    // Every acknowledged message is there, in order, and the refused one left no trace.
    expect(messages.map((m) => String(m.seq))).toEqual([...acked, String(acked.length + 1)]);
    expect(messages.at(-1)?.content).toBe("after freeing space");
  });
});
