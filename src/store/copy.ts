// `tenax store copy`: a profile's SQLite store (state.db) copied into another engine through the
// port, as the same write operations every store takes (ops.ts), so the target applies them with
// its own rules (its sequence counters, its search index) and nothing engine-specific is copied
// by hand. The source is opened read-only and never changed. The target must hold no Tenax data;
// after the copy every count is read back from it and compared.
//
// What is copied: every session (title, model, fingerprint, times), message (uid, role, content,
// tool calls, turn, time; renumbered 1..n per session in the source's order), turn (status, lease,
// error), record (jobs, runs, approvals, outboxes, ledgers, notes, deletion tombstones included)
// and stored response. Not copied: the key ledger's cooldowns (state that expires and is learnt
// again at the first call) and search.db (the target indexes the messages itself).
import type Database from "better-sqlite3";
import { tenaxCommand } from "../profile/command-hint.js";
import { StoreError } from "./errors.js";
import { SCHEMA_VERSION } from "./migrations.js";
import { openDatabase } from "./open-database.js";
import type { WriteOp } from "./ops.js";
import type { StorePort } from "./port.js";

/** What the copy needs of its target. */
export type CopyTarget = Pick<StorePort, "write" | "stats" | "where" | "listRecords" | "getResponse">;

export interface CopyCounts {
  sessions: number;
  messages: number;
  turns: number;
  records: number;
  responses: number;
}

export interface CopyProgress {
  table: keyof CopyCounts;
  done: number;
  total: number;
}

/** Operations per transaction on the target: large enough to be quick, small enough to retry. */
const BATCH = 500;

type Row = Record<string, unknown>;

export async function copyStore(
  source: { path: string; profile: string },
  target: CopyTarget,
  onProgress: (p: CopyProgress) => void = () => {},
): Promise<CopyCounts> {
  const db = openDatabase(source.path, { readonly: true, profile: source.profile });
  try {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version !== SCHEMA_VERSION)
      throw new StoreError(
        "store_copy_old_source",
        `${source.path} has schema version ${version}; a copy needs version ${SCHEMA_VERSION}`,
        {
          hint: `upgrade it by opening it once for writing, then copy again: ${tenaxCommand(source.profile, ["sessions", "reindex"])}`,
        },
      );
    const totals = sourceCounts(db);
    await refuseNonEmpty(target, db);
    const writer = new BatchWriter(target);
    await copySessions(db, writer, totals, onProgress);
    await copyRows(
      db,
      "records",
      "SELECT * FROM records ORDER BY kind, key",
      recordOp,
      writer,
      totals,
      onProgress,
    );
    await copyRows(
      db,
      "responses",
      "SELECT * FROM responses ORDER BY created_at, id",
      responseOp,
      writer,
      totals,
      onProgress,
    );
    await verify(db, target, totals);
    return totals;
  } finally {
    db.close();
  }
}

function sourceCounts(db: Database.Database): CopyCounts {
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  return {
    sessions: count("sessions"),
    messages: count("messages"),
    turns: count("turns"),
    records: count("records"),
    responses: count("responses"),
  };
}

async function refuseNonEmpty(target: CopyTarget, db: Database.Database): Promise<void> {
  const stats = await target.stats();
  const turns = Object.values(stats.turns).reduce((a, b) => a + b, 0);
  const kinds = db.prepare("SELECT DISTINCT kind FROM records").pluck().all() as string[];
  let records = 0;
  for (const kind of kinds) records += (await target.listRecords(kind)).length;
  if (stats.sessions + stats.messages + turns + records > 0)
    throw new StoreError(
      "store_copy_target_not_empty",
      `${target.where} already holds Tenax data (${stats.sessions} sessions, ${stats.messages} messages, ${turns} turns, ${records} records): a copy goes only into an empty database`,
      { hint: "create an empty database for this profile (createdb NAME) and copy into that" },
    );
}

/** Collects operations and writes them in transactions of BATCH. */
class BatchWriter {
  private ops: WriteOp[] = [];

  constructor(private readonly target: CopyTarget) {}

  async add(...ops: WriteOp[]): Promise<void> {
    this.ops.push(...ops);
    if (this.ops.length >= BATCH) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.ops.length === 0) return;
    const ops = this.ops;
    this.ops = [];
    await this.target.write(ops);
  }
}

/** Each session with its messages and turns, then what later writes changed (title, times). */
async function copySessions(
  db: Database.Database,
  writer: BatchWriter,
  totals: CopyCounts,
  onProgress: (p: CopyProgress) => void,
): Promise<void> {
  const messages = db.prepare("SELECT * FROM messages WHERE session_id = ? ORDER BY seq");
  const turns = db.prepare("SELECT * FROM turns WHERE session_id = ? ORDER BY started_at, rowid");
  const done = { sessions: 0, messages: 0, turns: 0 };
  for (const s of db.prepare("SELECT * FROM sessions ORDER BY created_at, rowid").all() as Row[]) {
    const id = String(s.id);
    await writer.add(sessionCreate(s));
    for (const m of messages.all(id) as Row[]) {
      await writer.add(messageAppend(m));
      done.messages++;
    }
    for (const t of turns.all(id) as Row[]) {
      await writer.add(...turnOps(t));
      done.turns++;
    }
    await writer.add(sessionFinish(s));
    done.sessions++;
    if (done.sessions % 100 === 0 || done.sessions === totals.sessions)
      onProgress({ table: "sessions", done: done.sessions, total: totals.sessions });
  }
  await writer.flush();
}

async function copyRows(
  db: Database.Database,
  table: "records" | "responses",
  sql: string,
  toOp: (row: Row) => WriteOp,
  writer: BatchWriter,
  totals: CopyCounts,
  onProgress: (p: CopyProgress) => void,
): Promise<void> {
  let done = 0;
  for (const row of db.prepare(sql).all() as Row[]) {
    await writer.add(toOp(row));
    done++;
  }
  await writer.flush();
  onProgress({ table, done, total: totals[table] });
}

const text = (v: unknown): string | null =>
  typeof v === "string" ? v : v === null || v === undefined ? null : String(v);
const int = (v: unknown): number => (typeof v === "bigint" ? Number(v) : Number(v ?? 0));
const intOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : int(v));

function sessionCreate(s: Row): WriteOp {
  return {
    op: "session.create",
    id: String(s.id),
    title: text(s.title),
    source: text(s.source) ?? "cli",
    model: text(s.model),
    parent_session_id: text(s.parent_session_id),
    created_at: int(s.created_at),
    metadata: text(s.metadata),
  };
}

/** The session as its last write left it: appending messages moved updated_at, and it ends here. */
function sessionFinish(s: Row): WriteOp {
  return {
    op: "session.update",
    id: String(s.id),
    title: text(s.title),
    model: text(s.model),
    conversation_hash: text(s.conversation_hash),
    updated_at: int(s.updated_at),
  };
}

function messageAppend(m: Row): WriteOp {
  return {
    op: "message.append",
    uid: String(m.uid),
    session_id: String(m.session_id),
    role: String(m.role),
    content: text(m.content),
    content_kind: m.content_kind === "parts" ? "parts" : "text",
    tool_calls: text(m.tool_calls),
    tool_call_id: text(m.tool_call_id),
    name: text(m.name),
    turn_id: text(m.turn_id),
    created_at: int(m.created_at),
  };
}

function turnOps(t: Row): WriteOp[] {
  const id = String(t.id);
  return [
    {
      op: "turn.start",
      id,
      session_id: String(t.session_id),
      started_at: int(t.started_at),
      lease_owner: text(t.lease_owner),
      lease_expires_at: intOrNull(t.lease_expires_at),
    },
    {
      op: "turn.update",
      id,
      status: String(t.status),
      ended_at: intOrNull(t.ended_at),
      lease_owner: text(t.lease_owner),
      lease_expires_at: intOrNull(t.lease_expires_at),
      heartbeat_at: intOrNull(t.heartbeat_at),
      interrupt_count: int(t.interrupt_count),
      error: text(t.error),
    },
  ];
}

function recordOp(r: Row): WriteOp {
  return {
    op: "record.put",
    kind: String(r.kind),
    key: String(r.key),
    session_id: text(r.session_id),
    value: text(r.value),
    updated_at: int(r.updated_at),
  };
}

function responseOp(r: Row): WriteOp {
  return {
    op: "response.put",
    id: String(r.id),
    session_id: text(r.session_id),
    model: String(r.model),
    status: String(r.status),
    previous_response_id: text(r.previous_response_id),
    input: String(r.input),
    output: String(r.output),
    response: String(r.response),
    created_at: int(r.created_at),
  };
}

/** Read every count back from the target; any difference fails the copy, naming the table. */
async function verify(db: Database.Database, target: CopyTarget, totals: CopyCounts): Promise<void> {
  const stats = await target.stats();
  const turns = Object.values(stats.turns).reduce((a, b) => a + b, 0);
  const differences: string[] = [];
  const compare = (what: string, expected: number, got: number) => {
    if (expected !== got) differences.push(`${what}: ${expected} in the source, ${got} in the target`);
  };
  compare("sessions", totals.sessions, stats.sessions);
  compare("messages", totals.messages, stats.messages);
  compare("turns", totals.turns, turns);
  const liveByKind = db
    .prepare("SELECT kind, count(*) AS n FROM records WHERE value IS NOT NULL GROUP BY kind")
    .all() as { kind: string; n: number }[];
  for (const { kind, n } of liveByKind)
    compare(`records of kind ${kind}`, n, (await target.listRecords(kind)).length);
  let responses = 0;
  for (const id of db.prepare("SELECT id FROM responses").pluck().all() as string[])
    if ((await target.getResponse(id)) !== null) responses++;
  compare("responses", totals.responses, responses);
  if (differences.length > 0)
    throw new StoreError(
      "store_copy_mismatch",
      `the copy into ${target.where} does not match the source: ${differences.join("; ")}`,
      { hint: "the source is unchanged; drop the target database, create it empty and copy again" },
    );
}
