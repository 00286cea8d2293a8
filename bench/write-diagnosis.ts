// Where an append's time goes, with numbers: the cost of a message id, how many pages one
// single-message commit writes to the WAL (through the real Store), and how fast the same
// transaction runs when parts of its work are left out. The variants run as raw SQL on a private
// copy of the base store, starting from the store's own OpApplier; they are evidence for a change
// to src/store, not a measurement of the store as it is.
import { randomFillSync } from "node:crypto";
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { newId } from "../src/core/ids.js";
import { OpApplier, type WriteOp } from "../src/store/ops.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { Corpus, type MessageDraft } from "./corpus.js";
import { int, table } from "./report.js";
import { median } from "./stats.js";
import { copyFixture, type Fixture } from "./store-fixture.js";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/** newId's format, with the random part cut from a buffer filled 256 ids at a time. */
function pooledIds(): (prefix: string, now: number) => string {
  const pool = Buffer.alloc(4096);
  let at = pool.length;
  return (prefix, now) => {
    let time = "";
    let t = now;
    for (let i = 0; i < 10; i++) {
      time = ALPHABET[t % 32] + time;
      t = Math.floor(t / 32);
    }
    if (at + 16 > pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    let rand = "";
    for (let i = 0; i < 16; i++) rand += ALPHABET[(pool[at + i] ?? 0) % 32];
    at += 16;
    return `${prefix}${time}${rand}`;
  };
}

interface Variant {
  name: string;
  batch: number;
  /** Returns a function that writes `messages` in one transaction. */
  make: (db: Database.Database) => (messages: MessageDraft[], session: string) => void;
}

function appendOp(d: MessageDraft, session: string, uid: string, now: number): WriteOp {
  return {
    op: "message.append",
    uid,
    session_id: session,
    role: d.role,
    content: typeof d.content === "string" ? d.content : null,
    content_kind: "text",
    tool_calls: d.tool_calls ? JSON.stringify(d.tool_calls) : null,
    tool_call_id: d.tool_call_id ?? null,
    name: null,
    turn_id: null,
    created_at: now,
  };
}

/** The store's own applier, as Store.write runs it (without the busy retry). */
function storeApplier(ids: (p: string, now: number) => string, shrink: boolean): Variant["make"] {
  return (db) => {
    const applier = new OpApplier(db);
    const drop = db.prepare("PRAGMA shrink_memory");
    return (messages, session) => {
      if (shrink) drop.run();
      db.transaction(() =>
        applier.applyAll(messages.map((m) => appendOp(m, session, ids("m_", Date.now()), Date.now()))),
      ).immediate();
    };
  };
}

interface Lean {
  /** row: a search_queue row per message, as now; none: no queue row at all. */
  queue: "row" | "none";
  /** each: update the session's updated_at with every message, as now; once: once per batch. */
  touch: "each" | "once" | "none";
  seqEach: boolean;
}

/** The same rows with less work per message. */
function leaner(flags: Lean): Variant["make"] {
  return (db) => {
    const ids = pooledIds();
    const s = {
      exists: db.prepare("SELECT 1 FROM sessions WHERE id = ?").pluck(),
      nextSeq: db.prepare("SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?").pluck(),
      insert: db.prepare(
        `INSERT INTO messages (uid, session_id, seq, role, content, content_kind, tool_calls, tool_call_id, name, turn_id, created_at)
         VALUES (?, ?, ?, ?, ?, 'text', ?, ?, NULL, NULL, ?) ON CONFLICT (uid) DO NOTHING`,
      ),
      queue: db.prepare("INSERT OR REPLACE INTO search_queue (message_id, op) VALUES (?, 'index')"),
      touch: db.prepare("UPDATE sessions SET updated_at = max(updated_at, ?) WHERE id = ?"),
    };
    return (messages, session) => {
      db.transaction(() => {
        s.exists.get(session);
        let seq = s.nextSeq.get(session) as number;
        let last = 0;
        for (const m of messages) {
          const now = Date.now();
          if (flags.seqEach) seq = s.nextSeq.get(session) as number;
          const info = s.insert.run(
            ids("m_", now),
            session,
            seq,
            m.role,
            typeof m.content === "string" ? m.content : null,
            m.tool_calls ? JSON.stringify(m.tool_calls) : null,
            m.tool_call_id ?? null,
            now,
          );
          if (info.changes === 0) continue;
          seq++;
          last = now;
          if (flags.queue === "row") s.queue.run(info.lastInsertRowid);
          if (flags.touch === "each") s.touch.run(now, session);
        }
        if (flags.touch === "once") s.touch.run(last, session);
      }).immediate();
    };
  };
}

const VARIANTS: Variant[] = [
  { name: "batch 1000: the store's OpApplier", batch: 1000, make: storeApplier(newId, false) },
  {
    name: "batch 1000: + ids from a pooled random buffer",
    batch: 1000,
    make: storeApplier(pooledIds(), false),
  },
  {
    name: "batch 1000: + positional INSERT, seq and session update once per batch, ON CONFLICT for the uid",
    batch: 1000,
    make: leaner({ queue: "row", touch: "once", seqEach: false }),
  },
  { name: "single: the store's OpApplier, with the page re-read", batch: 1, make: storeApplier(newId, true) },
  { name: "single: the store's OpApplier", batch: 1, make: storeApplier(newId, false) },
  {
    name: "single: lean statements doing the store's work",
    batch: 1,
    make: leaner({ queue: "row", touch: "each", seqEach: true }),
  },
  {
    name: "single: lean, no search_queue row at all",
    batch: 1,
    make: leaner({ queue: "none", touch: "each", seqEach: true }),
  },
  {
    name: "single: lean, no session update",
    batch: 1,
    make: leaner({ queue: "row", touch: "none", seqEach: true }),
  },
];

export interface WriteDiagnosis {
  new_id_us: number;
  pooled_id_us: number;
  /** Bytes and 4 KiB pages one appendMessage commit adds to the WAL, through the real Store. */
  wal_bytes_per_single_commit: number;
  wal_pages_per_single_commit: number;
  variants: { name: string; per_s: number[]; median_per_s: number }[];
  lines: string[];
}

function idCost(make: (p: string, now: number) => string): number {
  const n = 100_000;
  const started = performance.now();
  for (let i = 0; i < n; i++) make("m_", Date.now());
  return ((performance.now() - started) * 1000) / n;
}

async function walPerCommit(fixture: Fixture, dir: string): Promise<number> {
  const paths = copyFixture(fixture, dir);
  const store = await openStore(paths, { synchronous: "normal", integrityCheckTimeoutMs: 0 });
  try {
    const session = await store.createSession({ title: "wal" });
    // Start from an empty WAL: SQLite rewinds it at the first commit after a full checkpoint.
    const side = new Database(paths.state);
    side.pragma("wal_checkpoint(TRUNCATE)");
    side.close();
    await store.appendMessage({ session_id: session, role: "user", content: "warm up" });
    const before = statSync(`${paths.state}-wal`).size;
    const n = 50;
    for (let i = 0; i < n; i++) {
      await store.appendMessage({
        session_id: session,
        role: "user",
        content: "a short message ".repeat(30),
      });
    }
    return (statSync(`${paths.state}-wal`).size - before) / n;
  } finally {
    await releaseStore(store);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function diagnoseWrites(
  fixture: Fixture,
  workDir: string,
  rounds: number,
  seconds: number,
  log: (line: string) => void,
): Promise<WriteDiagnosis> {
  const walBytes = await walPerCommit(fixture, join(workDir, "wal"));
  const corpus = new Corpus(0xd1a9);
  const drafts: MessageDraft[] = [];
  while (drafts.length < 20_000) drafts.push(...corpus.session(corpus.int(20, 200)));
  const results = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let round = 0; round < rounds; round++) {
    for (const variant of VARIANTS) {
      const dir = join(workDir, "diag");
      const paths = copyFixture(fixture, dir);
      const db = new Database(paths.state);
      try {
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
        const write = variant.make(db);
        const newSession = db.prepare(
          "INSERT INTO sessions (id, source, created_at, updated_at) VALUES (?, 'bench', ?, ?)",
        );
        let next = 0;
        let written = 0;
        const started = performance.now();
        while (performance.now() - started < seconds * 1000) {
          // One session per batch (or per 110 single messages), as the throughput trials spread them.
          const session = newId("s_");
          newSession.run(session, Date.now(), Date.now());
          const count = variant.batch === 1 ? 110 : 1;
          for (let i = 0; i < count; i++) {
            const messages = Array.from(
              { length: variant.batch },
              () => drafts[next++ % drafts.length] as MessageDraft,
            );
            write(messages, session);
            written += messages.length;
          }
        }
        results.get(variant)?.push(written / ((performance.now() - started) / 1000));
      } finally {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    log(`  write diagnosis round ${round + 1} of ${rounds} done`);
  }
  const variants = VARIANTS.map((v) => {
    const perS = results.get(v) ?? [];
    return { name: v.name, per_s: perS, median_per_s: median(perS) };
  });
  const newIdUs = idCost(newId);
  const pooledUs = idCost(pooledIds());
  const lines = [
    "\nwrite diagnosis (raw SQL on a copy of the base store, synchronous=normal, median of rounds)",
    `newId: ${newIdUs.toFixed(2)} us per id (randomBytes(16) each time); from a pooled random buffer: ${pooledUs.toFixed(2)} us`,
    `one appendMessage commit adds ${int(walBytes)} bytes to the WAL: ${(walBytes / (4096 + 24)).toFixed(1)} pages of 4 KiB`,
    table(
      ["variant", "messages/s"],
      variants.map((v) => [v.name, int(v.median_per_s)]),
    ),
  ];
  return {
    new_id_us: newIdUs,
    pooled_id_us: pooledUs,
    wal_bytes_per_single_commit: walBytes,
    wal_pages_per_single_commit: walBytes / (4096 + 24),
    variants,
    lines,
  };
}
