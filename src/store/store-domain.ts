// What a store means to the rest of Tenax, written once for every engine: sessions, messages,
// turns, records and responses as write operations (ops.ts). An adapter supplies the engine part
// (how a list of operations is committed and when it is durable); this class turns the domain's
// requests into those operations. Reads are the adapter's own (each engine has its SQL).
import type { Clock } from "../core/deps.js";
import { newId } from "../core/ids.js";
import { FIRST_EPOCH, isLeaseLost, leaseLostDetail } from "./lease-fence.js";
import type {
  AppliedMessage,
  ApplyOptions,
  ContentKind,
  OpResult,
  ResponsePutOp,
  TurnUpdateOp,
  WriteOp,
} from "./ops.js";
import { ReadView } from "./read-view.js";
import type { SpoolRecord } from "./spool.js";
import type { NewMessage, NewSession, StoreEvent } from "./store-types.js";

/** A write committed (visible to reads) and, later, durable (safe to acknowledge). */
export interface StagedWrite {
  applied: Promise<OpResult[]>;
  durable: Promise<OpResult[]>;
}

/** The write that creates a session, and its id (to commit it along with other writes). */
export function sessionCreateOp(input: NewSession, now: number): { id: string; op: WriteOp } {
  const id = input.id ?? newId("s_", now);
  const op: WriteOp = {
    op: "session.create",
    id,
    title: input.title ?? null,
    source: input.source ?? "cli",
    model: input.model ?? null,
    parent_session_id: input.parent_session_id ?? null,
    created_at: now,
    metadata: input.metadata ? JSON.stringify(input.metadata) : null,
  };
  return { id, op };
}

/** The write that appends one message; its uid makes a retry or replay of it harmless. */
export function messageAppendOp(input: NewMessage, now: number): WriteOp {
  const parts = Array.isArray(input.content);
  return {
    op: "message.append",
    uid: input.uid ?? newId("m_", now),
    session_id: input.session_id,
    role: input.role,
    content: parts ? JSON.stringify(input.content) : ((input.content as string | null) ?? null),
    content_kind: (parts ? "parts" : "text") as ContentKind,
    tool_calls: input.tool_calls ? JSON.stringify(input.tool_calls) : null,
    tool_call_id: input.tool_call_id ?? null,
    name: input.name ?? null,
    turn_id: input.turn_id ?? null,
    created_at: now,
    ...(input.lease_epoch === undefined ? {} : { lease_epoch: input.lease_epoch }),
  };
}

/** What starts a turn (`beginTurn`). */
export interface TurnStart {
  sessionId: string;
  leaseMs: number;
  /** The lease owner; `pid:N` of this process when left out. */
  owner?: string;
  /** The user's message, committed with the start. */
  question?: Omit<NewMessage, "session_id" | "turn_id">;
  /** Writes committed with the start, before it (a new session and its history). */
  before?: readonly WriteOp[];
  /** When the lease starts, by the clock leases are judged in (the database's on PostgreSQL). */
  leaseNow?: number;
  /**
   * The start needs no sync of its own: the caller tells nobody of the turn before its answer,
   * whose synced commit makes the start durable too (ApplyOptions.durableWithNext).
   */
  durableWithNext?: boolean;
}

/** A turn just begun: its id, its lease epoch, and when it is committed and durable. */
export interface BegunTurn {
  id: string;
  /** The lease epoch the starting process holds (FIRST_EPOCH); its own writes carry it. */
  epoch: number;
  applied: Promise<unknown>;
  durable: Promise<unknown>;
}

export abstract class StoreDomain extends ReadView {
  protected abstract readonly clock: Clock;
  private readonly listeners = new Set<(event: StoreEvent) => void>();

  /** Hear the store's events (faults, recoveries, integrity); returns the function that stops it. */
  on(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A write's promise, telling the store's listeners of a fenced write (`lease_lost`) as it is
   * refused, and of each turn this process took over (`turn_takeover`) once that is committed; the
   * refusal itself reaches the caller unchanged.
   */
  protected fencing<T>(written: Promise<T>, path: string, ops: readonly WriteOp[] = []): Promise<T> {
    const takeovers = ops.filter(isTakeover);
    if (takeovers.length > 0)
      void written.then(
        () => {
          for (const op of takeovers)
            this.emit({
              type: "turn_takeover",
              layer: "store",
              path,
              turn_id: op.id,
              owner: op.lease_owner ?? null,
            });
        },
        () => {},
      );
    return written.catch((error: unknown) => {
      if (isLeaseLost(error))
        this.emit({
          type: "lease_lost",
          layer: "store",
          path,
          ...leaseLostDetail(error),
          message: error.message,
        });
      throw error;
    });
  }

  protected emit(event: StoreEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A failing listener must never break a write.
      }
    }
  }

  /** Apply operations in one transaction; resolves once they are durable (the acknowledgement). */
  abstract write(ops: WriteOp[], options?: ApplyOptions): Promise<OpResult[]>;

  /** The same, also saying when the write is committed and visible to reads, before it is durable. */
  abstract writeStaged(ops: WriteOp[], options?: ApplyOptions): StagedWrite;

  async createSession(input: NewSession = {}): Promise<string> {
    const { id, op } = this.sessionOp(input);
    await this.write([op]);
    return id;
  }

  /** The write that creates a session, and its id (to commit it along with other writes). */
  sessionOp(input: NewSession = {}): { id: string; op: WriteOp } {
    return sessionCreateOp(input, this.clock.now());
  }

  messageOp(input: NewMessage): WriteOp {
    return messageAppendOp(input, this.clock.now());
  }

  async appendMessage(input: NewMessage): Promise<AppliedMessage> {
    const [result] = await this.write([this.messageOp(input)]);
    return result?.message as AppliedMessage;
  }

  /** Several messages in one transaction (all or nothing). */
  async appendMessages(inputs: NewMessage[]): Promise<AppliedMessage[]> {
    const results = await this.write(inputs.map((m) => this.messageOp(m)));
    return results.map((r) => r.message as AppliedMessage);
  }

  /** Put a durable record (memory note, todo list, component state); null deletes it. */
  async putRecord(
    kind: string,
    key: string,
    value: unknown,
    options: { sessionId?: string | null } = {},
  ): Promise<void> {
    await this.write([
      {
        op: "record.put",
        kind,
        key,
        session_id: options.sessionId ?? null,
        value: value === null || value === undefined ? null : JSON.stringify(value),
        updated_at: this.clock.now(),
      },
    ]);
  }

  /**
   * Start a turn holding a lease; with `question`, the user's message is committed in the same
   * transaction (one sync instead of two, and never a turn without its question), and with
   * `before`, those writes first (a new session and its history: a turn's whole start in one).
   */
  async startTurn(
    sessionId: string,
    leaseMs: number,
    owner = `pid:${process.pid}`,
    question?: Omit<NewMessage, "session_id" | "turn_id">,
    before: readonly WriteOp[] = [],
  ): Promise<string> {
    const begun = this.beginTurn({ sessionId, leaseMs, owner, ...(question ? { question } : {}), before });
    await begun.durable;
    return begun.id;
  }

  /**
   * `startTurn`, telling apart the moment the turn is committed (the transcript holds its
   * question: the model can be asked) from the moment it is durable (anyone can be told of it).
   */
  beginTurn(start: TurnStart): BegunTurn {
    const { sessionId, leaseMs, owner = `pid:${process.pid}`, question, before = [] } = start;
    const now = this.clock.now();
    const id = newId("t_", now);
    const leaseFrom = start.leaseNow ?? now;
    const { applied, durable } = this.writeStaged(
      [
        ...before,
        {
          op: "turn.start",
          id,
          session_id: sessionId,
          started_at: now,
          lease_owner: owner,
          lease_expires_at: leaseFrom + leaseMs,
        },
        ...(question ? [this.messageOp({ ...question, session_id: sessionId, turn_id: id })] : []),
      ],
      start.durableWithNext === true ? { durableWithNext: true } : {},
    );
    return { id, epoch: FIRST_EPOCH, applied, durable };
  }

  async updateTurn(op: Omit<TurnUpdateOp, "op">): Promise<void> {
    await this.write([{ op: "turn.update", ...op }]);
  }

  /** Store (or replace) a Responses API answer; resolves once it is committed. */
  async putResponse(row: Omit<ResponsePutOp, "op">): Promise<void> {
    await this.write([{ op: "response.put", ...row }]);
  }

  /** Delete a stored response; resolves with whether there was one. */
  async deleteResponse(id: string): Promise<boolean> {
    const [result] = await this.write([{ op: "response.delete", id }]);
    return (result?.changes ?? 0) > 0;
  }

  async deleteSession(id: string): Promise<number> {
    const [result] = await this.write([{ op: "session.delete", id }]);
    return result?.changes ?? 0;
  }

  /** Fold spooled writes into this store; already present messages (same uid) are skipped. */
  async replay(records: SpoolRecord[]): Promise<{ ops: number; messages: number; duplicates: number }> {
    let ops = 0;
    let messages = 0;
    let duplicates = 0;
    for (const record of records) {
      const results = await this.write(record.ops, { createMissingSessions: true });
      ops += results.length;
      for (const r of results) {
        if (r.message?.duplicate) duplicates++;
        else if (r.message) messages++;
      }
    }
    return { ops, messages, duplicates };
  }
}

/** A turn put back to running under a new lease with its epoch moved on: a takeover (a resume). */
function isTakeover(op: WriteOp): op is TurnUpdateOp {
  return op.op === "turn.update" && op.new_epoch === true && op.status === "running";
}
