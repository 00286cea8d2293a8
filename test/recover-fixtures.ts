// Shared by the recovery tests: real stores filled through the real Store with seeded content,
// and an independent map of which rowids sit on which pages (from SQLite's dbstat, not from our
// own page parser), so a test knows exactly which rows a damaged page takes with it.
import { existsSync, readFileSync } from "node:fs";
import Database from "better-sqlite3";
import { type Random, seededRandom } from "../src/core/deps.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import type { RecordPutOp } from "../src/store/ops.js";
import { openStore } from "../src/store/registry.js";
import type { NewMessage, Store } from "../src/store/store.js";
import { fileDigest } from "./helpers/corrupt.js";

export interface WrittenMessage {
  id: number;
  uid: string;
  session_id: string;
  seq: number;
  content: string;
}

export interface Written {
  sessions: string[];
  messages: WrittenMessage[];
  turns: string[];
}

export interface BuildSpec {
  sessions: number;
  messagesPerSession: number;
  seed: number;
  /** One message in this many is large enough to spill onto overflow pages (0: none). */
  bigEvery?: number;
  turnsPerSession?: number;
}

export function content(random: Random, big: boolean): string {
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"];
  const length = big ? 5000 + Math.floor(random() * 9000) : 40 + Math.floor(random() * 400);
  let text = "";
  while (text.length < length) text += `${words[Math.floor(random() * words.length)]} `;
  return text.slice(0, length);
}

/** A store filled session by session (each session's messages together, as a conversation is). */
export async function buildStore(
  paths: ProfilePaths,
  spec: BuildSpec,
): Promise<{ store: Store; written: Written }> {
  const random = seededRandom(spec.seed);
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0, synchronous: "normal" });
  const written: Written = { sessions: [], messages: [], turns: [] };
  let n = 0;
  for (let s = 0; s < spec.sessions; s++) {
    const id = await store.createSession({ title: `session ${s}`, metadata: { n: s } });
    written.sessions.push(id);
    for (let t = 0; t < (spec.turnsPerSession ?? 1); t++)
      written.turns.push(await store.startTurn(id, 60_000));
    for (let i = 0; i < spec.messagesPerSession; i += 50) {
      const batch: NewMessage[] = [];
      for (let j = i; j < Math.min(i + 50, spec.messagesPerSession); j++) {
        const big = spec.bigEvery !== undefined && spec.bigEvery > 0 && ++n % spec.bigEvery === 0;
        batch.push({
          session_id: id,
          role: j % 2 === 0 ? "user" : "assistant",
          content: content(random, big),
        });
      }
      const applied = await store.appendMessages(batch);
      applied.forEach((a, k) => {
        const input = batch[k];
        if (input === undefined) return;
        written.messages.push({
          id: a.id,
          uid: "",
          session_id: id,
          seq: a.seq,
          content: String(input.content),
        });
      });
    }
  }
  // uids are generated inside the store; read them back once.
  const uids = new Map<number, string>();
  for (const s of written.sessions) for (const m of await store.getMessages(s)) uids.set(m.id, m.uid);
  for (const m of written.messages) m.uid = uids.get(m.id) ?? "";
  return { store, written };
}

export interface PageMap {
  /** Leaf page -> rowids on it, in order. */
  leaves: Map<number, number[]>;
  /** Overflow page -> the rowid whose payload it holds. */
  overflow: Map<number, number>;
  interior: number[];
}

/** Which rowids live on which pages of a table, from dbstat's walk of the b-tree. */
export function pageMap(path: string, table: string): PageMap {
  const db = new Database(path, { readonly: true });
  try {
    const rowids = db.prepare(`SELECT rowid FROM ${table} ORDER BY rowid`).pluck().all() as number[];
    const pages = db
      .prepare("SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = ? ORDER BY path")
      .all(table) as { path: string; pageno: number; pagetype: string; ncell: number }[];
    const map: PageMap = { leaves: new Map(), overflow: new Map(), interior: [] };
    const leafByPath = new Map<string, number[]>();
    let next = 0;
    for (const p of pages) {
      if (p.pagetype === "leaf") {
        const on = rowids.slice(next, next + p.ncell);
        next += p.ncell;
        map.leaves.set(p.pageno, on);
        leafByPath.set(p.path, on);
      } else if (p.pagetype === "internal") map.interior.push(p.pageno);
    }
    for (const p of pages) {
      if (p.pagetype !== "overflow") continue;
      const m = /^(.*\/)([0-9a-f]+)\+[0-9a-f]+$/.exec(p.path);
      const owner = m ? leafByPath.get(m[1] ?? "")?.[Number.parseInt(m[2] ?? "", 16)] : undefined;
      if (owner === undefined) throw new Error(`cannot place overflow page ${p.path}`);
      map.overflow.set(p.pageno, owner);
    }
    if (next !== rowids.length)
      throw new Error(`dbstat leaves hold ${next} cells, the table ${rowids.length}`);
    return map;
  } finally {
    db.close();
  }
}

/** The rowids a set of damaged pages takes with it: the rows on its leaves and those it overflows. */
export function rowidsOn(map: PageMap, pages: number[]): Set<number> {
  const out = new Set<number>();
  for (const p of pages) for (const r of map.leaves.get(p) ?? []) out.add(r);
  for (const [p, owner] of map.overflow) if (pages.includes(p)) out.add(owner);
  return out;
}

/** sha256 of a store's three files ("missing" for an absent one). */
export function digests(path: string): Record<string, string> {
  return {
    db: fileDigest(path),
    wal: fileDigest(`${path}-wal`),
    shm: fileDigest(`${path}-shm`),
  };
}

/** Every message of a store file, by uid, read with plain SQLite. */
export function messagesIn(
  path: string,
): Map<string, { id: number; session_id: string; seq: number; content: string }> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT id, uid, session_id, seq, content FROM messages").all() as {
      id: number;
      uid: string;
      session_id: string;
      seq: number;
      content: string;
    }[];
    return new Map(rows.map((r) => [r.uid, r]));
  } finally {
    db.close();
  }
}

export function readJson(path: string): unknown {
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null;
}

export interface StoredRecord {
  kind: string;
  key: string;
  session_id: string | null;
  value: string | null;
  updated_at: number;
}

/** The identity of a record in these tests' maps (the same string recovery uses). */
export const recordKeyOf = (kind: string, key: string) => JSON.stringify([kind, key]);

/** Every record of a store file, by recordKeyOf, read with plain SQLite. */
export function recordsIn(path: string): Map<string, StoredRecord> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT * FROM records ORDER BY kind, key").all() as StoredRecord[];
    return new Map(rows.map((r) => [recordKeyOf(r.kind, r.key), r]));
  } finally {
    db.close();
  }
}

export interface RecordSpec {
  seed: number;
  /** Global memory notes. */
  notes: number;
  /** Events of the one run (in the second session). */
  runEvents: number;
}

const put = (
  kind: string,
  key: string,
  sessionId: string | null,
  value: unknown,
  at: number,
): RecordPutOp => ({
  op: "record.put",
  kind,
  key,
  session_id: sessionId,
  value: value === null ? null : JSON.stringify(value),
  updated_at: at,
});

/**
 * Records of every kind Tenax keeps, with the kinds and keys the agent and gateway use: memory
 * notes (global), a todo list and usage per session, a compaction summary large enough to spill onto
 * overflow pages, and a run with its events and Idempotency-Key. Read them back with recordsIn.
 */
export async function writeRecords(
  store: Store,
  sessions: readonly string[],
  spec: RecordSpec,
): Promise<void> {
  const random = seededRandom(spec.seed);
  let at = 1_700_000_000_000;
  for (let i = 0; i < spec.notes; i++) {
    const note = { text: content(random, false), created_at: ++at };
    await store.write([put("memory", `n_${String(i).padStart(4, "0")}`, null, note, at)]);
  }
  for (const [s, id] of sessions.entries()) {
    const items = Array.from({ length: 5 + s * 20 }, (_, i) => ({
      text: `step ${i} of ${id}`,
      status: "pending",
    }));
    await store.write([
      put("todo", id, id, items, ++at),
      put("usage", id, id, { input_tokens: 1000 * (s + 1), output_tokens: 77 * (s + 1) }, ++at),
    ]);
  }
  const first = sessions[0] ?? "";
  await store.write([put("compaction", first, first, { summary: content(random, true) }, ++at)]);
  const session = sessions[1] ?? first;
  const run = "run_0001";
  const ops: RecordPutOp[] = [];
  for (let i = 1; i <= spec.runEvents; i++) {
    const data = { type: "delta", text: content(random, false).slice(0, 80) };
    ops.push(
      put(
        "run_event",
        `${run}/${String(i).padStart(10, "0")}`,
        session,
        { id: i, type: "delta", data },
        ++at,
      ),
    );
  }
  const state = { run_id: run, session_id: session, status: "completed", last_event_id: spec.runEvents };
  ops.push(put("run", run, session, state, ++at), put("run_idem", "key-1", session, { run_id: run }, ++at));
  await store.write(ops);
}

export interface RecordPageMap {
  /** Leaf page -> the records on it (by recordKeyOf), in order. */
  leaves: Map<number, string[]>;
  /** Interior page -> the records on it. */
  interior: Map<number, string[]>;
  /** Overflow page -> the record whose value it holds. */
  overflow: Map<number, string>;
}

/**
 * Which records sit on which page of the records b-tree, from dbstat's walk of it (not from our
 * page parser). It is an index b-tree: every entry is on exactly one page, interior pages included,
 * in the order child 0, entry 0, child 1, entry 1, ..., the right-most child.
 */
export function recordPages(path: string): RecordPageMap {
  const db = new Database(path, { readonly: true });
  try {
    const keys = (db.prepare("SELECT kind, key FROM records ORDER BY kind, key").all() as StoredRecord[]).map(
      (r) => recordKeyOf(r.kind, r.key),
    );
    const pages = db
      .prepare("SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = 'records'")
      .all() as { path: string; pageno: number; pagetype: string; ncell: number }[];
    const byPath = new Map(pages.map((p) => [p.path, p]));
    const out: RecordPageMap = { leaves: new Map(), interior: new Map(), overflow: new Map() };
    const onPath = new Map<string, string[]>(); // the records of each page, in cell order
    let next = 0;
    const take = (into: Map<number, string[]>, path: string, pageno: number, n: number) => {
      const taken = keys.slice(next, next + n);
      next += n;
      into.set(pageno, [...(into.get(pageno) ?? []), ...taken]);
      onPath.set(path, [...(onPath.get(path) ?? []), ...taken]);
    };
    const visit = (path: string): void => {
      const page = byPath.get(path);
      if (page === undefined) throw new Error(`dbstat has no page at ${path}`);
      if (page.pagetype === "leaf") {
        take(out.leaves, path, page.pageno, page.ncell);
        return;
      }
      const child = (i: number) => `${path}${i.toString(16).padStart(3, "0")}/`;
      for (let i = 0; i < page.ncell; i++) {
        visit(child(i));
        take(out.interior, path, page.pageno, 1);
      }
      visit(child(page.ncell));
    };
    visit("/");
    if (next !== keys.length)
      throw new Error(`dbstat places ${next} records, the table holds ${keys.length}`);
    for (const p of pages) {
      if (p.pagetype !== "overflow") continue;
      const m = /^(.*\/)([0-9a-f]+)\+[0-9a-f]+$/.exec(p.path);
      const owner = m ? onPath.get(m[1] ?? "")?.[Number.parseInt(m[2] ?? "", 16)] : undefined;
      if (owner === undefined) throw new Error(`cannot place overflow page ${p.path}`);
      out.overflow.set(p.pageno, owner);
    }
    return out;
  } finally {
    db.close();
  }
}
