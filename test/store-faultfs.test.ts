// Fault injection under the store, in the spirit of SQLite's crash tests: a small LD_PRELOAD
// library (fixtures/faultfs/faultfs.c, compiled here with the machine's C compiler) fails the
// N-th write, sync or truncate of the profile's files with EIO or ENOSPC, or kills the writer
// mid-write; then the store, opened normally, must hold every acknowledged transaction in full
// and no transaction in part, pass integrity_check, and never have acknowledged unsynced data.
// Seeded: TENAX_SEED=N replays a run (it prints `seed=N`).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import { profilePaths } from "../src/profile/paths.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { readSpool } from "../src/store/spool.js";
import { buildFaultfs } from "./fixtures/faultfs/build.js";
import { ROOT, requireBuild, runAsync } from "./helpers/cli.js";

const SEED = process.env.TENAX_SEED ? Number(process.env.TENAX_SEED) : Math.floor(Math.random() * 2 ** 31);
const MODES = ["eio", "enospc", "kill"] as const;
const RUNS_PER_MODE = 20;
const TRANSACTIONS = 40;
const FRESH_RUNS_PER_MODE = 5;
const WRITER = resolve(ROOT, "test", "fixtures", "faultfs-writer.mjs");
const SOURCE = resolve(ROOT, "test", "fixtures", "faultfs", "faultfs.c");

// Not tempDir(): that is emptied after each test, and the library and template serve them all.
const work = mkdtempSync(join(tmpdir(), "tenax-faultfs-"));
afterAll(() => {
  if (!process.env.TENAX_KEEP_TMP) rmSync(work, { recursive: true, force: true });
});

const library = process.platform === "linux" ? buildFaultfs(SOURCE, work) : null;
if (library === null)
  console.log("store-faultfs: SKIPPED, no C compiler (cc, gcc, clang) found or not Linux");

interface Txn {
  txn: number;
  kind: string;
  uids: string[];
  sessions: string[];
  records: string[];
}

interface Child {
  begun: Map<number, Txn>;
  acked: Set<number>;
  failed: string[];
  killed: boolean;
  dirtyAcks: string[];
  /** "NAME CODE" of the error when the writer could not open the store. */
  openFailed: string | null;
  counted: number;
  stderr: string;
}

async function runWriter(
  profileDir: string,
  env: Record<string, string>,
  synchronous = "full",
): Promise<Child> {
  const report = `${profileDir}.count`;
  const run = await runAsync(
    process.execPath,
    [WRITER, profileDir, "default", String(SEED), String(TRANSACTIONS), synchronous],
    {
      env: {
        ...process.env,
        LD_PRELOAD: library ?? "",
        FAULTFS_MATCH: `${profileDir}/`,
        FAULTFS_DURABLE: "state.db",
        FAULTFS_REPORT: report,
        ...env,
      },
    },
  );
  const child: Child = {
    begun: new Map(),
    acked: new Set(),
    failed: [],
    killed: run.status === null,
    dirtyAcks: [...run.stderr.matchAll(/faultfs: DIRTY-ACK (.*)/g)].map((m) => m[1] ?? ""),
    openFailed: null,
    counted: existsSync(report) ? Number(readFileSync(report, "utf8")) : 0,
    stderr: run.stderr,
  };
  for (const line of run.stdout.split("\n")) {
    const [word, id, ...rest] = line.split(" ");
    if (word === "begin") child.begun.set(Number(id), JSON.parse(rest.join(" ")) as Txn);
    if (word === "ack") child.acked.add(Number(id));
    if (word === "fail") child.failed.push(`${id}:${rest.join(" ")}`);
    if (word === "open-failed") child.openFailed = [id, ...rest].join(" ");
  }
  return child;
}

/** What is wrong with a store against what the child began and acknowledged; [] when nothing. */
function problemsIn(dbPath: string, child: Child): string[] {
  const problems: string[] = [];
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const integrity = db.pragma("integrity_check", { simple: true });
    if (integrity !== "ok") problems.push(`integrity_check: ${String(integrity)}`);
    const rows = db.prepare("SELECT uid, session_id, seq FROM messages ORDER BY session_id, seq").all() as {
      uid: string;
      session_id: string;
      seq: number;
    }[];
    const uids = new Set(rows.map((r) => r.uid));
    const sessions = new Set(db.prepare("SELECT id FROM sessions").pluck().all() as string[]);
    const records = new Set(
      db.prepare("SELECT key FROM records WHERE kind = 'fault'").pluck().all() as string[],
    );
    const bySession = new Map<string, number[]>();
    for (const r of rows) bySession.set(r.session_id, [...(bySession.get(r.session_id) ?? []), r.seq]);
    for (const [session, seqs] of bySession)
      if (seqs.some((s, i) => s !== i + 1))
        problems.push(`session ${session}: seq not contiguous ${seqs.join(",")}`);
    const known = new Set<string>();
    for (const txn of child.begun.values()) {
      for (const uid of txn.uids) known.add(uid);
      const parts = [
        ...txn.uids.map((u) => uids.has(u)),
        ...txn.sessions.map((s) => sessions.has(s)),
        ...txn.records.map((k) => records.has(k)),
      ];
      const present = parts.filter(Boolean).length;
      if (present !== 0 && present !== parts.length)
        problems.push(`txn ${txn.txn} (${txn.kind}) is in part: ${present} of ${parts.length} pieces`);
      if (child.acked.has(txn.txn) && present !== parts.length)
        problems.push(`txn ${txn.txn} (${txn.kind}) was acknowledged and is missing`);
    }
    for (const uid of uids) if (!known.has(uid)) problems.push(`message ${uid} was never written`);
  } finally {
    db.close();
  }
  return problems;
}

/** Open the store as a writer does, fold in the spool, and check it (through recovery if corrupt). */
async function verify(profileDir: string, child: Child): Promise<{ problems: string[]; recovered: boolean }> {
  const paths = profilePaths(profileDir, "default");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 10_000 });
  const corrupt = store.health().corrupt;
  if (corrupt === null) {
    const spool = readSpool(paths.spool);
    if (spool.records.length > 0) await store.replay(spool.records);
  }
  await releaseStore(store);
  if (corrupt === null) return { problems: problemsIn(paths.state, child), recovered: false };
  // The store said it is damaged: then recovery must bring back everything acknowledged.
  const output = join(profileDir, "recovered.db");
  await recoverStore({ source: paths.state, output });
  return { problems: [`(said corrupt: ${corrupt.detail})`, ...problemsIn(output, child)], recovered: true };
}

describe.skipIf(library === null)("a fault-injecting file layer under the store", () => {
  it("keeps every transaction all or nothing and every acknowledged one, whichever write or sync fails", async () => {
    requireBuild();
    console.log(`store-faultfs seed=${SEED}`);
    const random = seededRandom(SEED);
    // A created, migrated, checkpointed store: the faults land on the transactions, not the setup.
    const template = join(work, "template");
    mkdirSync(template);
    await releaseStore(await openStore(profilePaths(template, "default"), { integrityCheckTimeoutMs: 0 }));

    const calibration = join(work, "calibration");
    cpSync(template, calibration, { recursive: true });
    const clean = await runWriter(calibration, { FAULTFS_N: "0" });
    // Without a fault: every transaction acknowledged, durably, and the store checks out.
    expect(clean.acked.size).toBe(TRANSACTIONS + 1);
    expect(clean.dirtyAcks).toEqual([]);
    expect((await verify(calibration, clean)).problems).toEqual([]);
    // The durability probe works: with synchronous=normal a commit is acknowledged before its
    // WAL frames are synced, and faultfs says so.
    const relaxed = join(work, "relaxed");
    cpSync(template, relaxed, { recursive: true });
    expect((await runWriter(relaxed, { FAULTFS_N: "0" }, "normal")).dirtyAcks.length).toBeGreaterThan(0);
    const total = clean.counted;
    expect(total).toBeGreaterThan(TRANSACTIONS);
    // The same run on an empty profile: the writer creates the store (schema, identity) first.
    const fresh = join(work, "fresh");
    mkdirSync(fresh);
    const cleanFresh = await runWriter(fresh, { FAULTFS_N: "0" });
    expect(cleanFresh.acked.size).toBe(TRANSACTIONS + 1);
    const creation = Math.max(1, cleanFresh.counted - total);

    // One fault point per stratum of the range, so every part of the run is hit somewhere.
    const plan = MODES.flatMap((mode) =>
      Array.from({ length: RUNS_PER_MODE }, (_, i) => {
        const from = Math.floor((i * total) / RUNS_PER_MODE);
        const to = Math.floor(((i + 1) * total) / RUNS_PER_MODE);
        return { mode, n: 1 + from + Math.floor(random() * Math.max(1, to - from)), empty: false };
      }),
    );
    // And a few faults while the writer creates the store, on an empty profile.
    for (const mode of MODES)
      for (let i = 0; i < FRESH_RUNS_PER_MODE; i++)
        plan.push({ mode, n: 1 + Math.floor(random() * (creation + 20)), empty: true });
    const rows = new Map(
      MODES.map((m) => [
        m,
        {
          runs: 0,
          created: 0,
          open_refused: 0,
          hit: 0,
          killed: 0,
          refused: 0,
          acknowledged: 0,
          verified: 0,
          recovered: 0,
        },
      ]),
    );
    const problems: string[] = [];
    let next = 0;
    // Two at a time: each run is a node start and ~1 s of small fsynced transactions.
    const worker = async () => {
      for (let i = next++; i < plan.length; i = next++) {
        const { mode, n, empty } = plan[i] as (typeof plan)[number];
        const dir = join(work, `run-${i}`);
        if (empty) mkdirSync(dir);
        else cpSync(template, dir, { recursive: true });
        const child = await runWriter(dir, { FAULTFS_N: String(n), FAULTFS_MODE: mode });
        const result = await verify(dir, child);
        const row = rows.get(mode) as NonNullable<ReturnType<typeof rows.get>>;
        row.runs++;
        row.created += empty ? 1 : 0;
        row.open_refused += child.openFailed !== null ? 1 : 0;
        row.hit += child.killed || child.counted >= n ? 1 : 0;
        row.killed += child.killed ? 1 : 0;
        row.refused += child.failed.length;
        row.acknowledged += child.acked.size;
        row.recovered += result.recovered ? 1 : 0;
        const bad = [
          ...result.problems.filter((p) => !p.startsWith("(said corrupt")),
          ...child.dirtyAcks.map((path) => `acknowledged with unsynced data in ${path}`),
          ...(mode !== "kill" && child.killed ? ["the writer died of a signal"] : []),
          // A refused write says why, as a typed error (never a bare SqliteError).
          ...child.failed.filter((f) => !/^\d+:store_/.test(f)).map((f) => `a write failed untyped: ${f}`),
          // A store that cannot be opened says why, as a typed error too.
          ...(child.openFailed !== null && !/^Store\w*Error store_/.test(child.openFailed)
            ? [`opening failed with ${child.openFailed}`]
            : []),
          // A writer that lived to count the N-th call must have died of it.
          ...(mode === "kill" && !child.killed && child.counted >= n ? ["the writer was not killed"] : []),
        ];
        if (bad.length === 0) row.verified += child.acked.size;
        else
          problems.push(
            `${mode} N=${n}${empty ? " (empty profile)" : ""} (seed=${SEED}): ${[...result.problems, ...bad].join("; ")}`,
          );
        rmSync(dir, { recursive: true, force: true });
      }
    };
    await Promise.all([worker(), worker()]);

    console.log(
      `store-faultfs seed=${SEED}: ${total} counted calls in a clean run of ${TRANSACTIONS + 1} transactions, ${creation} more to create the store`,
    );
    console.table(MODES.map((mode) => ({ mode, ...rows.get(mode) })));
    expect(problems).toEqual([]);
    for (const mode of MODES) {
      const row = rows.get(mode);
      expect(row?.runs).toBe(RUNS_PER_MODE + FRESH_RUNS_PER_MODE);
      // The faults were felt: EIO and ENOSPC refused writes, kill ended writers.
      if (mode === "kill") expect(row?.killed).toBeGreaterThan(RUNS_PER_MODE / 2);
      else expect(row?.refused).toBeGreaterThan(0);
    }
  }, 180_000);

  it("opens the store and takes every write when search.db fails to open or write", async () => {
    requireBuild();
    // search.db is derived: an I/O error on it degrades search (and rebuilds it), never the store.
    // The first calls on search.db are its creation when the store opens (once a bare SqliteError).
    for (const n of [1, 2, 3, 5, 8, 13]) {
      const dir = join(work, `search-${n}`);
      mkdirSync(dir);
      const child = await runWriter(dir, {
        FAULTFS_N: String(n),
        FAULTFS_MODE: "eio",
        FAULTFS_MATCH: `${dir}/search.db`,
      });
      expect(child.openFailed, `N=${n}`).toBeNull();
      expect(child.acked.size, `N=${n}: ${child.stderr}`).toBe(TRANSACTIONS + 1);
      expect((await verify(dir, child)).problems).toEqual([]);
    }
  });
});
