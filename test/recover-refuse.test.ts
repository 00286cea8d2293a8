// What recover and restore refuse to do, and the forensic folder's fallback: each refusal leaves
// every file as it was.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TenaxError } from "../src/core/errors.js";
import { profilePaths } from "../src/profile/paths.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { restoreStore } from "../src/store/recover/restore.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import { buildStore, digests, pageMap, readJson } from "./recover-fixtures.js";

async function smallStore(name = "default") {
  const paths = name === "default" ? tempProfile() : profilePaths(tempDir(), name);
  mkdirSync(paths.dir, { recursive: true });
  const { store, written } = await buildStore(paths, { sessions: 2, messagesPerSession: 30, seed: 3 });
  await releaseStore(store);
  return { paths, written };
}

async function recovered(paths: ReturnType<typeof tempProfile>) {
  const output = join(tempDir(), "new.db");
  await recoverStore({ source: paths.state, output });
  return output;
}

async function refusal(promise: Promise<unknown>): Promise<TenaxError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!TenaxError.isInstance(error)) throw new Error(`expected a TenaxError, got ${String(error)}`);
  return error;
}

describe("recover refuses", () => {
  it("an output path that exists (or has a WAL), and a missing source, as usage errors", async () => {
    const { paths } = await smallStore();
    const output = join(tempDir(), "taken.db");
    writeFileSync(output, "x");
    const taken = await refusal(recoverStore({ source: paths.state, output }));
    expect(taken).toMatchObject({ code: "usage", exitCode: 2 });
    expect(taken.message).toContain("already exists");
    const other = join(tempDir(), "free.db");
    writeFileSync(`${other}-wal`, "stale");
    expect((await refusal(recoverStore({ source: paths.state, output: other }))).message).toContain("-wal");
    expect(existsSync(other)).toBe(false);
    const missing = await refusal(
      recoverStore({ source: join(tempDir(), "nope.db"), output: join(tempDir(), "a.db") }),
    );
    expect(missing.message).toMatch(/no database file/);
  });

  it("falls back to a temp folder when the forensic folder cannot be written, and says so", async () => {
    const { paths } = await smallStore();
    writeFileSync(paths.forensics, "a file where the forensic folder should be");
    const report = await recoverStore({ source: paths.state });
    expect(report.forensics.fallback).toMatch(/could not be written/);
    expect(report.forensics.dir.startsWith(tmpdir())).toBe(true);
    expect(report.notes[0]).toBe(report.forensics.fallback);
    const manifest = readJson(report.forensics.manifest) as { files: { role: string; size: number }[] };
    expect(manifest.files.map((f) => f.role)).toEqual(
      ["db", "wal", "shm"].filter((r) => existsSync(`${paths.state}${r === "db" ? "" : `-${r}`}`)),
    );
  });

  it("honours --forensics and --spool folders", async () => {
    const { paths } = await smallStore();
    const forensics = tempDir();
    const spool = tempDir();
    writeFileSync(
      join(spool, "20260101T000000-1-abcdef.jsonl"),
      `${JSON.stringify({ v: 1, spooled_at: 1, profile: "default", store: paths.state, reason: "corrupt", ops: [{ op: "session.update", id: "x", updated_at: 1 }] })}\n`,
    );
    const report = await recoverStore({ source: paths.state, forensicsDir: forensics, spoolDir: spool });
    expect(report.forensics.dir.startsWith(forensics)).toBe(true);
    expect(report.spool).toMatchObject({
      dir: spool,
      files: ["20260101T000000-1-abcdef.jsonl"],
      records: 1,
      ops: 1,
    });
  });
});

describe("restore refuses", () => {
  it("a store of another profile, a file that is not a store, and a store that fails its check", async () => {
    const { paths } = await smallStore();
    const work = await smallStore("work");
    const foreign = await recovered(work.paths);
    expect((await refusal(restoreStore({ paths, from: foreign }))).code).toBe("store_wrong_profile");
    const junk = join(tempDir(), "junk.db");
    writeFileSync(
      junk,
      "not a database at all, just some text that is long enough to have a header".repeat(3),
    );
    expect((await refusal(restoreStore({ paths, from: junk }))).code).toBe("store_corrupt");
    const bad = await recovered(paths);
    checkpoint(bad);
    const leaves = [...pageMap(bad, "messages").leaves.keys()];
    overwritePages(bad, [leaves[0] ?? 0], "garbage", 1);
    const before = digests(paths.state);
    expect((await refusal(restoreStore({ paths, from: bad }))).code).toBe("restore_bad_store");
    expect(digests(paths.state)).toEqual(before);
  });

  it("while the gateway runs or another connection holds the store, leaving everything as it was", async () => {
    const { paths } = await smallStore();
    const output = await recovered(paths);
    writeFileSync(paths.pid, String(process.pid));
    const before = digests(paths.state);
    const running = await refusal(restoreStore({ paths, from: output }));
    expect(running).toMatchObject({ code: "restore_in_use" });
    expect(running.hint).toBe(`stop it first (kill ${process.pid}), then retry`);
    writeFileSync(paths.pid, "999999999");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const open = await refusal(restoreStore({ paths, from: output }));
    await releaseStore(store);
    expect(open).toMatchObject({ code: "restore_in_use" });
    expect(
      existsSync(paths.forensics) ? readdirSync(paths.forensics).filter((d) => d.endsWith("-replaced")) : [],
    ).toEqual([]);
    const after = digests(paths.state);
    expect(after.db).toBe(before.db);
  });

  it("when state.db changed after the recovery, unless forced; a store too damaged to open does not block", async () => {
    const { paths, written } = await smallStore();
    const output = await recovered(paths);
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.appendMessage({ session_id: written.sessions[0] ?? "", role: "user", content: "late" });
    await releaseStore(store);
    const changed = await refusal(restoreStore({ paths, from: output }));
    expect(changed.code).toBe("restore_source_changed");
    expect(changed.hint).toContain(`tenax sessions recover --source ${paths.state} --inspect-only`);
    overwritePages(paths.state, [1], "garbage", 2);
    const forced = await restoreStore({ paths, from: output, force: true });
    expect(forced.restored_to).toBe(paths.state);
    const back = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    expect((await back.listSessions()).length).toBe(2);
    await releaseStore(back);
  });
});
