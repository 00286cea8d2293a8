// The write operations (ops.ts) applied to PostgreSQL, with the semantics of SQLite's OpApplier:
// idempotent by id and uid, records last-writer-wins by updated_at, claims only over the text the
// writer read. Message sequence numbers come from the session row's counter, taken under that
// row's lock, so any number of concurrent writers get 1..n with no gap and no duplicate.
import type pg from "pg";
import { StoreError } from "../errors.js";
import { FIRST_EPOCH, fenceRefusal, type LeaseClaim, type LeaseRow, leaseClaimOf } from "../lease-fence.js";
import { ONE_RUNNING_INDEX, type RunningTurn, turnRunningRefusal } from "../one-running-turn.js";
import type {
  AppliedMessage,
  ApplyOptions,
  MessageAppendOp,
  OpResult,
  RecordClaimOp,
  SessionUpdateOp,
  TurnStartOp,
  TurnUpdateOp,
  WriteOp,
} from "../ops.js";
import { indexText } from "../search-index.js";

/** One session as this transaction knows it: its row locked, its next seq, the updated_at to write. */
interface SessionState {
  nextSeq: number;
  touchAt: number | null;
}

const SESSION_INSERT = `INSERT INTO sessions (id, title, source, model, parent_session_id, created_at, updated_at, metadata)
  VALUES ($1, $2, $3, $4, $5, $6, $6, $7) ON CONFLICT (id) DO NOTHING`;

/** No conflict target: a turn already there (a replay) and the session's running turn (turns_one_running) both change nothing. */
const TURN_INSERT = `INSERT INTO turns (id, session_id, status, started_at, lease_owner, lease_expires_at, heartbeat_at, lease_epoch)
  VALUES ($1, $2, $6, $3, $4, $5, $3, ${FIRST_EPOCH}) ON CONFLICT DO NOTHING`;

const RUNNING_TURN = "SELECT id, lease_owner FROM turns WHERE session_id = $1 AND status = 'running'";

/** The newest updated_at wins (an equal one too, as in SQLite), so an older replay never undoes it. */
const RECORD_PUT = `INSERT INTO records (kind, key, session_id, value, updated_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (kind, key) DO UPDATE SET
    session_id = excluded.session_id, value = excluded.value, updated_at = excluded.updated_at
  WHERE excluded.updated_at >= records.updated_at`;

const RESPONSE_FIELDS = [
  "id",
  "session_id",
  "model",
  "status",
  "previous_response_id",
  "input",
  "output",
  "response",
  "created_at",
] as const;

/** A replaced response takes a new row_no, as SQLite's INSERT OR REPLACE gives it a new rowid. */
const RESPONSE_PUT = `INSERT INTO responses (${RESPONSE_FIELDS.join(", ")})
  VALUES (${RESPONSE_FIELDS.map((_, i) => `$${i + 1}`).join(", ")})
  ON CONFLICT (id) DO UPDATE SET row_no = DEFAULT,
    ${RESPONSE_FIELDS.slice(1)
      .map((f) => `${f} = excluded.${f}`)
      .join(", ")}`;

const TURN_FIELDS = [
  "status",
  "ended_at",
  "lease_owner",
  "lease_expires_at",
  "heartbeat_at",
  "interrupt_count",
  "error",
] as const;

/** Applies the operations of one transaction on one connection; used once per attempt. */
export class PgOpApplier {
  private readonly batch = new Map<string, SessionState>();

  constructor(private readonly client: pg.PoolClient) {}

  async applyAll(ops: readonly WriteOp[], options: ApplyOptions = {}): Promise<OpResult[]> {
    await this.lockSessionsInOrder(ops);
    const results: OpResult[] = [];
    for (const op of ops) results.push(await this.apply(op, options));
    for (const id of [...this.batch.keys()]) await this.flushSession(id);
    return results;
  }

  /**
   * A write appending to several sessions locks their rows first, in id order, so two writes over
   * the same sessions in opposite orders queue instead of deadlocking.
   */
  private async lockSessionsInOrder(ops: readonly WriteOp[]): Promise<void> {
    const ids = new Set(ops.flatMap((op) => (op.op === "message.append" ? [op.session_id] : [])));
    if (ids.size < 2) return;
    await this.run('SELECT 1 FROM sessions WHERE id = ANY($1) ORDER BY id COLLATE "C" FOR UPDATE', [
      [...ids],
    ]);
  }

  /** Write what the batch holds for a session (its updated_at, its counter) and forget it. */
  private async flushSession(id: string): Promise<void> {
    const state = this.batch.get(id);
    if (state === undefined) return;
    this.batch.delete(id);
    await this.run("UPDATE sessions SET updated_at = greatest(updated_at, $1), next_seq = $2 WHERE id = $3", [
      state.touchAt ?? 0,
      state.nextSeq,
      id,
    ]);
  }

  /**
   * One statement of the transaction. PostgreSQL's text cannot hold a NUL character (SQLite's can):
   * one in a value (a tool's binary output) is stored as U+FFFD, so the write is taken, not refused.
   */
  private run<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    return this.client.query<R>(
      sql,
      values.map((v) =>
        typeof v === "string" && v.includes("\u0000") ? v.replaceAll("\u0000", "\uFFFD") : v,
      ),
    );
  }

  private async changes(sql: string, values: unknown[]): Promise<number> {
    return (await this.run(sql, values)).rowCount ?? 0;
  }

  private async apply(op: WriteOp, options: ApplyOptions): Promise<OpResult> {
    if (op.op === "session.create" || op.op === "session.update" || op.op === "session.delete") {
      await this.flushSession(op.id);
    }
    switch (op.op) {
      case "session.create":
        return {
          op: op.op,
          changes: await this.changes(SESSION_INSERT, [
            op.id,
            op.title,
            op.source,
            op.model,
            op.parent_session_id,
            op.created_at,
            op.metadata,
          ]),
        };
      case "session.update":
        return { op: op.op, changes: await this.updateSession(op) };
      case "session.delete":
        return { op: op.op, changes: await this.deleteSession(op.id) };
      case "message.append":
        return { op: op.op, changes: 1, message: await this.appendMessage(op, options) };
      case "turn.start":
        return { op: op.op, changes: await this.startTurn(op, options) };
      case "turn.update":
        return { op: op.op, changes: await this.updateTurn(op) };
      case "record.put":
        return {
          op: op.op,
          changes: await this.changes(RECORD_PUT, [op.kind, op.key, op.session_id, op.value, op.updated_at]),
        };
      case "record.claim":
        return { op: op.op, changes: await this.claim(op) };
      case "response.put":
        return {
          op: op.op,
          changes: await this.changes(
            RESPONSE_PUT,
            RESPONSE_FIELDS.map((f) => op[f]),
          ),
        };
      case "response.delete":
        return { op: op.op, changes: await this.changes("DELETE FROM responses WHERE id = $1", [op.id]) };
      default: {
        const never: never = op;
        throw new StoreError("store_bad_op", `unknown store operation ${JSON.stringify(never)}`);
      }
    }
  }

  private async updateSession(op: SessionUpdateOp): Promise<number> {
    const values: unknown[] = [op.id, op.updated_at];
    const sets = ["updated_at = greatest(updated_at, $2)"];
    for (const field of ["title", "model", "conversation_hash"] as const) {
      if (op[field] === undefined) continue;
      values.push(op[field]);
      sets.push(`${field} = $${values.length}`);
    }
    return this.changes(`UPDATE sessions SET ${sets.join(", ")} WHERE id = $1`, values);
  }

  private async deleteSession(id: string): Promise<number> {
    const messages = await this.changes("DELETE FROM messages WHERE session_id = $1", [id]);
    await this.run("DELETE FROM turns WHERE session_id = $1", [id]);
    await this.run("DELETE FROM records WHERE session_id = $1", [id]);
    await this.run("DELETE FROM responses WHERE session_id = $1", [id]);
    return messages + (await this.changes("DELETE FROM sessions WHERE id = $1", [id]));
  }

  /**
   * Insert a running turn (one already there is a replay: nothing changes). Refused with
   * `turn_running` while its session runs another turn; a replayed turn is stored interrupted then.
   */
  private async startTurn(op: TurnStartOp, options: ApplyOptions): Promise<number> {
    const values = (status: string) => [
      op.id,
      op.session_id,
      op.started_at,
      op.lease_owner,
      op.lease_expires_at,
      status,
    ];
    const changes = await this.changes(TURN_INSERT, values("running"));
    if (changes > 0) return changes;
    if ((await this.run("SELECT 1 FROM turns WHERE id = $1", [op.id])).rows.length > 0) return 0;
    if (options.createMissingSessions) return this.changes(TURN_INSERT, values("interrupted"));
    const running = (await this.run<RunningTurn>(RUNNING_TURN, [op.session_id])).rows[0];
    throw turnRunningRefusal(op.session_id, op.id, running);
  }

  /**
   * A turn going back to running (a resume) is refused while its session runs another; the index
   * decides a race between two such writes, and its refusal is told the same way.
   */
  private async freeSessionUpdate(turnId: string, sql: string, values: unknown[]): Promise<number> {
    type Holder = { session_id: string; id: string | null; lease_owner: string | null };
    const holder = (
      await this.run<Holder>(
        `SELECT turn.session_id, other.id, other.lease_owner FROM turns turn
         LEFT JOIN turns other ON other.session_id = turn.session_id AND other.status = 'running' AND other.id <> turn.id
         WHERE turn.id = $1`,
        [turnId],
      )
    ).rows[0];
    const sessionId = holder?.session_id ?? "";
    if (holder?.id != null)
      throw turnRunningRefusal(sessionId, turnId, { id: holder.id, lease_owner: holder.lease_owner });
    try {
      return await this.changes(sql, values);
    } catch (error) {
      if ((error as { constraint?: unknown }).constraint !== ONE_RUNNING_INDEX) throw error;
      throw turnRunningRefusal(sessionId, turnId, undefined);
    }
  }

  private async updateTurn(op: TurnUpdateOp): Promise<number> {
    const values: unknown[] = [op.id];
    const sets: string[] = [];
    for (const field of TURN_FIELDS) {
      if (op[field] === undefined) continue;
      values.push(op[field]);
      sets.push(`${field} = $${values.length}`);
    }
    if (op.new_epoch === true) sets.push("lease_epoch = lease_epoch + 1");
    const claim = leaseClaimOf(op);
    if (sets.length === 0) {
      if (claim !== null) await this.fence(claim);
      return 0;
    }
    const update = (sql: string) =>
      op.status === "running" ? this.freeSessionUpdate(op.id, sql, values) : this.changes(sql, values);
    if (claim === null) return update(`UPDATE turns SET ${sets.join(", ")} WHERE id = $1`);
    // Compare and set in one statement: of two takeovers at once, the second waits for the first's
    // row lock, then finds the epoch moved and changes nothing.
    const where = ["id = $1"];
    if (claim.epoch !== undefined) where.push(`lease_epoch = $${values.push(claim.epoch)}`);
    if (claim.status !== undefined) where.push(`status = $${values.push(claim.status)}`);
    const changes = await update(`UPDATE turns SET ${sets.join(", ")} WHERE ${where.join(" AND ")}`);
    if (changes === 0) await this.fence(claim);
    return changes;
  }

  /**
   * Refuse the write unless the turn's row matches the claim; the row stays locked until commit, so
   * no takeover lands between this check and the write it guards.
   */
  private async fence(claim: LeaseClaim): Promise<void> {
    const row = (
      await this.run<LeaseRow>("SELECT status, lease_epoch FROM turns WHERE id = $1 FOR UPDATE", [
        claim.turnId,
      ])
    ).rows[0];
    const refusal = fenceRefusal(
      claim,
      row === undefined ? undefined : { ...row, lease_epoch: Number(row.lease_epoch) },
    );
    if (refusal !== null) throw refusal;
  }

  /**
   * Absent (expect null: no row, or a tombstone) or exactly `expect`, checked by the statement that
   * writes: a concurrent claim waits for this one's row lock and then finds the value changed.
   */
  private async claim(op: RecordClaimOp): Promise<number> {
    const values = [op.kind, op.key, op.session_id, op.value, op.updated_at];
    const changes =
      op.expect === null
        ? await this.changes(
            `INSERT INTO records (kind, key, session_id, value, updated_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (kind, key) DO UPDATE SET
               session_id = excluded.session_id, value = excluded.value, updated_at = excluded.updated_at
             WHERE records.value IS NULL`,
            values,
          )
        : await this.changes(
            `UPDATE records SET session_id = $3, value = $4, updated_at = $5
             WHERE kind = $1 AND key = $2 AND value = $6`,
            [...values, op.expect],
          );
    if (changes === 0) {
      throw new StoreError(
        "record_conflict",
        `the record ${op.kind}/${op.key} changed since it was read (another process wrote it first)`,
      );
    }
    return changes;
  }

  /** Lock the session row (touching it) and learn its next seq; creates a placeholder when asked. */
  private async sessionState(op: MessageAppendOp, options: ApplyOptions): Promise<SessionState> {
    const known = this.batch.get(op.session_id);
    if (known !== undefined) {
      known.touchAt = Math.max(known.touchAt ?? 0, op.created_at);
      return known;
    }
    const lock = () =>
      this.run<{ next_seq: number }>(
        "UPDATE sessions SET updated_at = greatest(updated_at, $1) WHERE id = $2 RETURNING next_seq",
        [op.created_at, op.session_id],
      );
    let row = (await lock()).rows[0];
    if (row === undefined) {
      if (!options.createMissingSessions) {
        throw new StoreError("store_unknown_session", `session ${op.session_id} does not exist`, {
          hint: "create the session before appending messages to it",
        });
      }
      await this.run(SESSION_INSERT, [
        op.session_id,
        "(recovered: session record lost)",
        "recovered",
        null,
        null,
        op.created_at,
        null,
      ]);
      row = (await lock()).rows[0];
    }
    const state: SessionState = { nextSeq: Number(row?.next_seq ?? 1), touchAt: null };
    this.batch.set(op.session_id, state);
    return state;
  }

  private async appendMessage(op: MessageAppendOp, options: ApplyOptions): Promise<AppliedMessage> {
    // The session row first, then the turn's: the order every write that takes both keeps.
    const state = await this.sessionState(op, options);
    const claim = leaseClaimOf(op);
    if (claim !== null) await this.fence(claim);
    const seq = state.nextSeq;
    const inserted = await this.run<{ id: number }>(
      `INSERT INTO messages (uid, session_id, seq, role, content, content_kind, tool_calls, tool_call_id,
         name, turn_id, created_at, search_text)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (uid) DO NOTHING RETURNING id`,
      [
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
        indexText(op.content, op.content_kind, op.tool_calls),
      ],
    );
    const id = inserted.rows[0]?.id;
    if (id === undefined) {
      // Already stored under this uid (a retried or replayed write): report the original.
      const existing = await this.run<{ id: number; seq: number }>(
        "SELECT id, seq FROM messages WHERE uid = $1",
        [op.uid],
      );
      const row = existing.rows[0];
      return { id: Number(row?.id ?? 0), seq: Number(row?.seq ?? 0), duplicate: true };
    }
    state.nextSeq = seq + 1;
    return { id: Number(id), seq, duplicate: false };
  }
}
