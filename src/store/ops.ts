// Every change to the store is one of these operations. The same values are applied to SQLite,
// written to the spool when SQLite cannot take them, and replayed from the spool later, so each is
// idempotent: a session or turn is keyed by its id, a message by its uid.
import type Database from "better-sqlite3";
import { StoreError } from "./errors.js";
import { FIRST_EPOCH, fenceRefusal, type LeaseRow, leaseClaimOf } from "./lease-fence.js";
import { type RunningTurn, turnRunningRefusal } from "./one-running-turn.js";

export type ContentKind = "text" | "parts";

export interface SessionCreateOp {
  op: "session.create";
  id: string;
  title: string | null;
  source: string;
  model: string | null;
  parent_session_id: string | null;
  created_at: number;
  metadata: string | null;
}

export interface SessionUpdateOp {
  op: "session.update";
  id: string;
  title?: string | null;
  model?: string | null;
  /** The gateway's fingerprint of the conversation (migration 5). */
  conversation_hash?: string | null;
  updated_at: number;
}

export interface SessionDeleteOp {
  op: "session.delete";
  id: string;
}

export interface MessageAppendOp {
  op: "message.append";
  uid: string;
  session_id: string;
  role: string;
  content: string | null;
  content_kind: ContentKind;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  turn_id: string | null;
  created_at: number;
  /**
   * The lease epoch of `turn_id` the writer holds (lease-fence.ts): when set, the write is refused
   * with `lease_lost` unless it is the turn's current one. Left out by writes that are not the
   * running turn's own (markers of the reaper, tests, callers from before fencing).
   */
  lease_epoch?: number;
}

/** Starts a turn at lease epoch 1 (lease-fence.ts FIRST_EPOCH). */
export interface TurnStartOp {
  op: "turn.start";
  id: string;
  session_id: string;
  started_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

export interface TurnUpdateOp {
  op: "turn.update";
  id: string;
  status?: string;
  ended_at?: number | null;
  lease_owner?: string | null;
  lease_expires_at?: number | null;
  heartbeat_at?: number | null;
  interrupt_count?: number;
  error?: string | null;
  /** The lease epoch the writer holds: refused with `lease_lost` unless it is the turn's current one. */
  lease_epoch?: number;
  /** Refused with `lease_lost` unless the turn still has this status (a takeover's compare-and-set). */
  expect_status?: string;
  /** Start a new epoch (the current one plus one): a takeover, or the reaper's interrupt. */
  new_epoch?: boolean;
}

/** Put (or, with value null, delete) one durable record; the newest updated_at wins. */
export interface RecordPutOp {
  op: "record.put";
  kind: string;
  key: string;
  /** Deleting the session deletes its records. */
  session_id: string | null;
  /** JSON text, or null for a deletion. */
  value: string | null;
  updated_at: number;
}

/**
 * Put one record only if it is still what the writer last read: absent (`expect` null) or exactly
 * the JSON text `expect`. Otherwise the write is refused with `record_conflict` and nothing of it
 * is applied: how two processes agree on who claimed something (a cron occurrence).
 */
export interface RecordClaimOp {
  op: "record.claim";
  kind: string;
  key: string;
  session_id: string | null;
  value: string;
  expect: string | null;
  updated_at: number;
}

/** Store (or replace) one Responses API answer, keyed by its id. */
export interface ResponsePutOp {
  op: "response.put";
  id: string;
  /** The session the response's turn or call ran in; deleting the session deletes it. */
  session_id: string | null;
  model: string;
  status: string;
  previous_response_id: string | null;
  /** JSON: the request's input items. */
  input: string;
  /** JSON: the output items. */
  output: string;
  /** JSON: the rest of the Response object. */
  response: string;
  created_at: number;
}

export interface ResponseDeleteOp {
  op: "response.delete";
  id: string;
}

export type WriteOp =
  | RecordPutOp
  | RecordClaimOp
  | ResponsePutOp
  | ResponseDeleteOp
  | SessionCreateOp
  | SessionUpdateOp
  | SessionDeleteOp
  | MessageAppendOp
  | TurnStartOp
  | TurnUpdateOp;

export interface AppliedMessage {
  id: number;
  seq: number;
  duplicate: boolean;
}

export type OpResult = { op: WriteOp["op"]; changes: number; message?: AppliedMessage };

export interface ApplyOptions {
  /** When replaying, a message whose session row is gone gets a placeholder session. */
  createMissingSessions?: boolean;
  /**
   * The write is acknowledged once committed, without a sync of its own: it becomes durable with
   * the next synced commit. For a turn's start whose caller acknowledges nothing before the turn's
   * answer (a chat completion not streamed), so a turn makes one sync, its end's. A store may sync
   * it all the same (a group with other writes, PostgreSQL, whose commit is its sync).
   */
  durableWithNext?: boolean;
}

/** Prepared statements for one connection, built once. */
export class OpApplier {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    this.s = {
      sessionInsert: db.prepare(
        `INSERT OR IGNORE INTO sessions (id, title, source, model, parent_session_id, created_at, updated_at, metadata)
         VALUES (@id, @title, @source, @model, @parent_session_id, @created_at, @created_at, @metadata)`,
      ),
      sessionTouch: db.prepare("UPDATE sessions SET updated_at = max(updated_at, ?) WHERE id = ?"),
      messageByUid: db.prepare("SELECT id, seq FROM messages WHERE uid = ?"),
      nextSeq: db.prepare("SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?").pluck(),
      messageInsert: db.prepare(
        `INSERT INTO messages (uid, session_id, seq, role, content, content_kind, tool_calls, tool_call_id, name, turn_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (uid) DO NOTHING`,
      ),
      // One queue entry per message: the latest operation on it is the one that counts.
      queue: db.prepare("INSERT OR REPLACE INTO search_queue (message_id, op) VALUES (?, ?)"),
      queueSessionDelete: db.prepare(
        "INSERT OR REPLACE INTO search_queue (message_id, op) SELECT id, 'delete' FROM messages WHERE session_id = ?",
      ),
      deleteMessages: db.prepare("DELETE FROM messages WHERE session_id = ?"),
      deleteTurns: db.prepare("DELETE FROM turns WHERE session_id = ?"),
      deleteSession: db.prepare("DELETE FROM sessions WHERE id = ?"),
      recordPut: db.prepare(
        `INSERT INTO records (kind, key, session_id, value, updated_at)
         VALUES (@kind, @key, @session_id, @value, @updated_at)
         ON CONFLICT (kind, key) DO UPDATE SET
           session_id = excluded.session_id, value = excluded.value, updated_at = excluded.updated_at
         WHERE excluded.updated_at >= records.updated_at`,
      ),
      recordValue: db.prepare("SELECT value FROM records WHERE kind = ? AND key = ?").pluck(),
      recordClaim: db.prepare(
        `INSERT INTO records (kind, key, session_id, value, updated_at)
         VALUES (@kind, @key, @session_id, @value, @updated_at)
         ON CONFLICT (kind, key) DO UPDATE SET
           session_id = excluded.session_id, value = excluded.value, updated_at = excluded.updated_at`,
      ),
      deleteRecords: db.prepare("DELETE FROM records WHERE session_id = ?"),
      deleteSessionResponses: db.prepare("DELETE FROM responses WHERE session_id = ?"),
      responsePut: db.prepare(
        `INSERT OR REPLACE INTO responses (id, session_id, model, status, previous_response_id, input, output, response, created_at)
         VALUES (@id, @session_id, @model, @status, @previous_response_id, @input, @output, @response, @created_at)`,
      ),
      responseDelete: db.prepare("DELETE FROM responses WHERE id = ?"),
      turnInsert: db.prepare(
        `INSERT OR IGNORE INTO turns (id, session_id, status, started_at, lease_owner, lease_expires_at, heartbeat_at, lease_epoch)
         VALUES (@id, @session_id, @status, @started_at, @lease_owner, @lease_expires_at, @started_at, ${FIRST_EPOCH})`,
      ),
      turnLease: db.prepare("SELECT status, lease_epoch FROM turns WHERE id = ?"),
      runningTurn: db.prepare(
        "SELECT id, lease_owner FROM turns WHERE session_id = ? AND status = 'running'",
      ),
      otherRunningTurn: db.prepare(
        `SELECT other.id, other.lease_owner, turn.session_id FROM turns turn
         JOIN turns other ON other.session_id = turn.session_id AND other.status = 'running' AND other.id != turn.id
         WHERE turn.id = ?`,
      ),
    };
  }

  /**
   * Apply the operations of one transaction. Within it, each session's next sequence number is
   * looked up once and its updated_at written once at the end, however many messages it gets.
   */
  applyAll(ops: readonly WriteOp[], options: ApplyOptions = {}): OpResult[] {
    this.batch = new Map();
    try {
      const results = ops.map((op) => this.apply(op, options));
      for (const [id, state] of this.batch)
        if (state.touchAt !== null) this.s.sessionTouch.run(state.touchAt, id);
      return results;
    } finally {
      this.batch = new Map();
    }
  }

  /** Statements whose SET list depends on the fields an update carries, prepared once per shape. */
  private readonly shapes = new Map<string, Database.Statement>();

  private cached(sql: string): Database.Statement {
    let statement = this.shapes.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.shapes.set(sql, statement);
    }
    return statement;
  }

  /** Per session, within the current transaction: the next seq, and the updated_at still to write. */
  private batch = new Map<string, { nextSeq: number; touchAt: number | null }>();

  private apply(op: WriteOp, options: ApplyOptions): OpResult {
    const s = this.s;
    // Fenced first: a refusal throws before anything of the op is written (the transaction then
    // rolls back whatever came before it).
    const claim = leaseClaimOf(op);
    if (claim !== null) {
      const refusal = fenceRefusal(claim, s.turnLease.get(claim.turnId) as LeaseRow | undefined);
      if (refusal !== null) throw refusal;
    }
    if (op.op === "session.create" || op.op === "session.update" || op.op === "session.delete") {
      // Anything that may change a session's rows invalidates what the batch knows of it; a
      // pending updated_at is written first so that it is not lost.
      const pending = this.batch.get(op.id);
      if (pending?.touchAt != null) s.sessionTouch.run(pending.touchAt, op.id);
      this.batch.delete(op.id);
    }
    switch (op.op) {
      case "session.create":
        return { op: op.op, changes: s.sessionInsert.run(op).changes };
      case "session.update": {
        const sets = ["updated_at = max(updated_at, @updated_at)"];
        if (op.title !== undefined) sets.push("title = @title");
        if (op.model !== undefined) sets.push("model = @model");
        if (op.conversation_hash !== undefined) sets.push("conversation_hash = @conversation_hash");
        const info = this.cached(`UPDATE sessions SET ${sets.join(", ")} WHERE id = @id`).run({
          title: null,
          model: null,
          conversation_hash: null,
          ...op,
        });
        return { op: op.op, changes: info.changes };
      }
      case "session.delete": {
        s.queueSessionDelete.run(op.id);
        const changes = s.deleteMessages.run(op.id).changes;
        s.deleteTurns.run(op.id);
        s.deleteRecords.run(op.id);
        s.deleteSessionResponses.run(op.id);
        return { op: op.op, changes: changes + s.deleteSession.run(op.id).changes };
      }
      case "message.append":
        return { op: op.op, changes: 1, message: this.appendMessage(op, options) };
      case "turn.start":
        return { op: op.op, changes: this.startTurn(op, options) };
      case "record.put":
        return { op: op.op, changes: s.recordPut.run(op).changes };
      case "record.claim": {
        const current = (s.recordValue.get(op.kind, op.key) as string | null | undefined) ?? null;
        if (current !== op.expect)
          throw new StoreError(
            "record_conflict",
            `the record ${op.kind}/${op.key} changed since it was read (another process wrote it first)`,
          );
        const { expect: _expect, op: _op, ...row } = op;
        return { op: op.op, changes: s.recordClaim.run(row).changes };
      }
      case "response.put":
        return { op: op.op, changes: s.responsePut.run(op).changes };
      case "response.delete":
        return { op: op.op, changes: s.responseDelete.run(op.id).changes };
      case "turn.update": {
        const fields = [
          "status",
          "ended_at",
          "lease_owner",
          "lease_expires_at",
          "heartbeat_at",
          "interrupt_count",
          "error",
        ] as const;
        const sets = fields.filter((f) => op[f] !== undefined).map((f) => `${f} = @${f}`);
        if (op.new_epoch === true) sets.push("lease_epoch = lease_epoch + 1");
        if (sets.length === 0) return { op: op.op, changes: 0 };
        if (op.status === "running") this.sessionMustBeFree(op.id);
        const values: Record<string, unknown> = { id: op.id };
        for (const f of fields) if (op[f] !== undefined) values[f] = op[f];
        const info = this.cached(`UPDATE turns SET ${sets.join(", ")} WHERE id = @id`).run(values);
        return { op: op.op, changes: info.changes };
      }
      default: {
        const never: never = op;
        throw new StoreError("store_bad_op", `unknown store operation ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * Insert a running turn (one already there is a replay: nothing changes). Refused with
   * `turn_running` while its session runs another turn; a replayed turn is stored interrupted then.
   */
  private startTurn(op: TurnStartOp, options: ApplyOptions): number {
    const s = this.s;
    const changes = s.turnInsert.run({ ...op, status: "running" }).changes;
    if (changes > 0 || s.turnLease.get(op.id) !== undefined) return changes;
    if (options.createMissingSessions) return s.turnInsert.run({ ...op, status: "interrupted" }).changes;
    throw turnRunningRefusal(
      op.session_id,
      op.id,
      s.runningTurn.get(op.session_id) as RunningTurn | undefined,
    );
  }

  /** Refuse a turn going back to running (a resume) while its session runs another. */
  private sessionMustBeFree(turnId: string): void {
    const other = this.s.otherRunningTurn.get(turnId) as (RunningTurn & { session_id: string }) | undefined;
    if (other !== undefined) throw turnRunningRefusal(other.session_id, turnId, other);
  }

  private appendMessage(op: MessageAppendOp, options: ApplyOptions): AppliedMessage {
    const s = this.s;
    let state = this.batch.get(op.session_id);
    if (state === undefined) {
      // Touching the session first also says whether it exists: one lookup instead of two.
      if (s.sessionTouch.run(op.created_at, op.session_id).changes === 0) {
        if (!options.createMissingSessions) {
          throw new StoreError("store_unknown_session", `session ${op.session_id} does not exist`, {
            hint: "create the session before appending messages to it",
          });
        }
        s.sessionInsert.run({
          id: op.session_id,
          title: "(recovered: session record lost)",
          source: "recovered",
          model: null,
          parent_session_id: null,
          created_at: op.created_at,
          metadata: null,
        });
      }
      state = { nextSeq: s.nextSeq.get(op.session_id) as number, touchAt: null };
      this.batch.set(op.session_id, state);
    } else {
      state.touchAt = Math.max(state.touchAt ?? 0, op.created_at);
    }
    const seq = state.nextSeq;
    const info = s.messageInsert.run(
      op.uid,
      op.session_id,
      seq,
      op.role,
      op.content,
      op.content_kind,
      op.tool_calls,
      op.tool_call_id,
      op.name,
      op.turn_id,
      op.created_at,
    );
    if (info.changes === 0) {
      // Already stored under this uid (a retried or replayed write): report the original.
      const existing = s.messageByUid.get(op.uid) as { id: number; seq: number };
      return { ...existing, duplicate: true };
    }
    state.nextSeq = seq + 1;
    const id = Number(info.lastInsertRowid);
    s.queue.run(id, "index");
    return { id, seq, duplicate: false };
  }
}
