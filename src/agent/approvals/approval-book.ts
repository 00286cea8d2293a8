// The approvals of one process's agent: a command the exec policy holds back waits here on a durable
// record until someone who can answer does (the runs API, the chat, later a chat platform), it
// expires, or its turn stops. The record is committed before anyone is told of it, so a restart
// finds it still pending and the resumed turn waits on the same record; a decision is committed
// before the waiting turn goes on. "session" approvals are kept per session in the store, "always"
// ones are handed to `remember` (the profile's tools.exec.allow) and known here at once.
import type { Clock, Sleep } from "../../core/deps.js";
import { realSleep, systemClock } from "../../core/deps.js";
import { TenaxError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { StorePort } from "../../store/port.js";
import { isRecordConflict } from "../../store/record-ops.js";
import type { Scheduler } from "../scheduler.js";
import { TurnInterrupt } from "../turn-failure.js";
import {
  APPROVAL_KIND,
  APPROVAL_PENDING_KIND,
  type ApprovalDecision,
  type ApprovalRecord,
  effectiveStatus,
  listApprovals,
  listPendingApprovals,
  readApproval,
} from "./approval-records.js";

/** Patterns approved "always for this session": kind "exec_allow_session", one record per pattern. */
/** How often a waiting turn looks in the store for a decision another process made. */
const DECIDED_ELSEWHERE_MS = 1_000;

export const SESSION_ALLOW_KIND = "exec_allow_session";

export interface ApprovalRequest {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  command: string;
  reason: string;
  dangers: ApprovalRecord["dangers"];
  pattern: string;
  requestedBy: string;
  /** No one can answer: the record is written already denied, by this. */
  deniedBy?: string;
}

export interface ApprovalBookOptions {
  store: StorePort;
  /** tools.exec.approval_timeout, in ms. */
  timeoutMs: number;
  /** Add an "always" pattern to the profile's allow list (config.yaml). */
  remember?: (pattern: string) => Promise<void>;
  clock?: Clock;
  sleep?: Sleep;
}

const SESSION_KEY_SEPARATOR = "\n";

export class ApprovalBook {
  /** Turns waiting on a pending record here, by approval id. */
  private readonly waiters = new Map<string, (record: ApprovalRecord) => void>();
  /** Records being decided: a second decision for one of them is refused before any await. */
  private readonly deciding = new Set<string>();
  /** Patterns approved "always" by this process, in force at once. */
  private readonly always = new Set<string>();
  private readonly store: StorePort;
  private readonly clock: Clock;
  private readonly sleep: Sleep;

  constructor(private readonly options: ApprovalBookOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.sleep = options.sleep ?? realSleep;
  }

  /** The patterns approved beyond config for this session: "always" here, and "session" ones. */
  async approvedPatterns(sessionId: string): Promise<string[]> {
    const session = (
      await this.store.listRecords<{ pattern: string }>(SESSION_ALLOW_KIND, { sessionId })
    ).map((r) => r.value.pattern);
    return [...this.always, ...session];
  }

  /** Whether this tool call waits on a pending record (a resumed turn runs it again to go on waiting). */
  async isPending(sessionId: string, turnId: string, callId: string): Promise<boolean> {
    const now = this.clock.now();
    return (await listApprovals(this.store, sessionId)).some(
      (r) => r.turn_id === turnId && r.tool_call_id === callId && effectiveStatus(r, now) === "pending",
    );
  }

  get(approvalId: string): Promise<ApprovalRecord | null> {
    return readApproval(this.store, approvalId);
  }

  /** What waits for a decision now (past its expiry it is no longer pending). */
  async pending(): Promise<ApprovalRecord[]> {
    const now = this.clock.now();
    return (await listPendingApprovals(this.store)).filter((r) => effectiveStatus(r, now) === "pending");
  }

  /**
   * The record for this tool call: the one a turn interrupted by a restart left pending (so the
   * resumed turn waits on it), or a new one, committed before this resolves.
   */
  async open(request: ApprovalRequest): Promise<ApprovalRecord> {
    const earlier = (await listApprovals(this.store, request.sessionId)).find(
      (r) => r.turn_id === request.turnId && r.tool_call_id === request.toolCallId,
    );
    if (earlier) return earlier;
    const now = this.clock.now();
    const record: ApprovalRecord = {
      approval_id: newId("ap_", now),
      session_id: request.sessionId,
      turn_id: request.turnId,
      tool_call_id: request.toolCallId,
      tool: request.tool,
      command: request.command,
      reason: request.reason,
      dangers: request.dangers,
      pattern: request.pattern,
      requested_by: request.requestedBy,
      created_at: now,
      expires_at: now + this.options.timeoutMs,
      ...(request.deniedBy === undefined
        ? { status: "pending", decision: null, decided_by: null, decided_at: null }
        : { status: "denied", decision: "deny", decided_by: request.deniedBy, decided_at: now }),
    };
    await this.put(record);
    return record;
  }

  /**
   * Wait for the record's decision. Past its expiry it is committed as expired (denied). A stop
   * or interrupt of the turn cancels it; a shutdown leaves it pending for the resumed turn.
   */
  async wait(record: ApprovalRecord, signal: AbortSignal): Promise<ApprovalRecord> {
    if (record.status !== "pending") return record;
    const id = record.approval_id;
    const timer = new AbortController();
    const decided = new Promise<ApprovalRecord>((resolve) => {
      this.waiters.set(id, resolve);
      // A decision made by another process (another gateway of a shared store, the CLI) is only
      // in the store: looked for every DECIDED_ELSEWHERE_MS while the turn waits.
      void this.decidedElsewhere(id, AbortSignal.any([timer.signal, signal])).then(
        (found) => found !== null && resolve(found),
      );
    });
    const expired = this.sleep(
      Math.max(0, record.expires_at - this.clock.now()),
      AbortSignal.any([timer.signal, signal]),
    ).then(
      () => "expired" as const,
      () => "aborted" as const,
    );
    try {
      const outcome = await Promise.race([decided, expired]);
      if (outcome !== "expired" && outcome !== "aborted") return outcome;
      if (this.deciding.has(id)) return await decided;
      if (outcome === "expired") return await this.closeUnlessDecided(id, "expired", "the approval timeout");
      const reason: unknown = signal.reason;
      if (TurnInterrupt.isInstance(reason) && reason.code === "shutting_down") throw reason;
      await this.close(id, "cancelled", null, "the turn was stopped").catch(() => undefined);
      throw reason;
    } finally {
      timer.abort();
      this.waiters.delete(id);
    }
  }

  /**
   * Decide a pending record; resolves with it once committed. Throws a TenaxError `not_found`
   * for an unknown id and `already_decided` (with the record in its data) for one that is not
   * pending any more.
   */
  async decide(approvalId: string, decision: ApprovalDecision, decidedBy: string): Promise<ApprovalRecord> {
    const record = await this.get(approvalId);
    if (!record) {
      throw new TenaxError("not_found", `there is no approval ${approvalId}`, {
        hint: "list what is pending with: tenax approvals list",
      });
    }
    const status = effectiveStatus(record, this.clock.now());
    if (status !== "pending" || this.deciding.has(approvalId)) {
      throw new TenaxError("already_decided", `approval ${approvalId} is ${status}, not pending`, {
        data: { approval: record },
      });
    }
    if ((decision === "always" || decision === "session") && record.pattern === "") {
      throw new TenaxError(
        "no_pattern",
        `approval ${approvalId} cannot be "${decision}": its command fits no pattern (the policy could not read it as simple commands); approve it once or deny it`,
      );
    }
    this.deciding.add(approvalId);
    try {
      if (decision === "always") {
        await this.options.remember?.(record.pattern);
        this.always.add(record.pattern);
      }
      const extra =
        decision === "session"
          ? [
              {
                op: "record.put" as const,
                kind: SESSION_ALLOW_KIND,
                key: `${record.session_id}${SESSION_KEY_SEPARATOR}${record.pattern}`,
                session_id: record.session_id,
                value: JSON.stringify({ pattern: record.pattern, approval_id: approvalId }),
                updated_at: this.clock.now(),
              },
            ]
          : [];
      return await this.close(
        approvalId,
        decision === "deny" ? "denied" : "approved",
        decision,
        decidedBy,
        extra,
      );
    } finally {
      this.deciding.delete(approvalId);
    }
  }

  /** Commit every pending record past its expiry as expired (for `approvals list` to be true). */
  async expireDue(): Promise<number> {
    const now = this.clock.now();
    const due = (await listPendingApprovals(this.store)).filter(
      (r) => now >= r.expires_at && !this.waiters.has(r.approval_id),
    );
    for (const record of due)
      await this.closeUnlessDecided(record.approval_id, "expired", "the approval timeout");
    return due.length;
  }

  /**
   * Delete decided records older than `keepMs` (they are an audit trail, not a log kept forever);
   * returns how many went. Pending ones stay whatever their age.
   */
  async prune(keepMs: number): Promise<number> {
    const cutoff = this.clock.now() - keepMs;
    const old = (await listApprovals(this.store)).filter(
      (r) => r.status !== "pending" && (r.decided_at ?? r.created_at) < cutoff,
    );
    if (old.length === 0) return 0;
    await this.store.write(
      old.map((r) => ({
        op: "record.put" as const,
        kind: APPROVAL_KIND,
        key: r.approval_id,
        session_id: r.session_id,
        value: null,
        updated_at: this.clock.now(),
      })),
    );
    return old.length;
  }

  /** On the agent's scheduler: expire what no turn waits on any more, and prune old decisions. */
  maintainOn(scheduler: Scheduler, keepMs: number, onError: (error: unknown) => void): void {
    scheduler.every("approvals: expire", 30_000, () => this.expireDue().catch(onError));
    scheduler.every("approvals: prune", 3_600_000, () => this.prune(keepMs).catch(onError));
  }

  /** Close a record nobody decided; one another process decided meanwhile stays as decided. */
  private async closeUnlessDecided(
    approvalId: string,
    status: "expired" | "cancelled",
    by: string,
  ): Promise<ApprovalRecord> {
    try {
      return await this.close(approvalId, status, null, by);
    } catch (error) {
      if (TenaxError.isInstance(error) && error.code === "already_decided")
        return error.data.approval as ApprovalRecord;
      throw error;
    }
  }

  /** The record once another process decided it, polled until `signal` aborts; null then. */
  private async decidedElsewhere(id: string, signal: AbortSignal): Promise<ApprovalRecord | null> {
    while (!signal.aborted) {
      try {
        await this.sleep(DECIDED_ELSEWHERE_MS, signal);
        const record = await this.get(id);
        if (record !== null && record.status !== "pending") return record;
      } catch {
        // Aborted, or a read the store refused: the next look (or the expiry) decides.
      }
    }
    return null;
  }

  /**
   * Commit the record's end, only over the pending record as just read (a claim): of two
   * processes closing it at once (two gateways deciding, a decision and the expiry), one wins and
   * the other is told `already_decided` with the record as it stands.
   */
  private async close(
    approvalId: string,
    status: ApprovalRecord["status"],
    decision: ApprovalDecision | null,
    decidedBy: string,
    extra: Parameters<StorePort["write"]>[0] = [],
  ): Promise<ApprovalRecord> {
    const text = await this.store.getRecordText(APPROVAL_KIND, approvalId);
    const record = await this.get(approvalId);
    if (!record || text === null) throw new Error(`approval ${approvalId} vanished from the store`);
    const alreadyDecided = (stored: ApprovalRecord) =>
      new TenaxError("already_decided", `approval ${approvalId} is ${stored.status}, not pending`, {
        data: { approval: stored },
      });
    if (record.status !== "pending") throw alreadyDecided(record);
    const closed: ApprovalRecord = {
      ...record,
      status,
      decision,
      decided_by: decidedBy,
      decided_at: this.clock.now(),
    };
    try {
      await this.put(closed, extra, text);
    } catch (error) {
      if (!isRecordConflict(error)) throw error;
      const stored = await this.get(approvalId);
      throw alreadyDecided(stored ?? record);
    }
    this.waiters.get(approvalId)?.(closed);
    return closed;
  }

  /** Write a record (over `expect`, its stored text, when given: refused if it changed). */
  private async put(
    record: ApprovalRecord,
    extra: Parameters<StorePort["write"]>[0] = [],
    expect?: string,
  ): Promise<void> {
    const fields = {
      kind: APPROVAL_KIND,
      key: record.approval_id,
      session_id: record.session_id,
      value: JSON.stringify(record),
      updated_at: this.clock.now(),
    };
    await this.store.write([
      expect === undefined ? { op: "record.put", ...fields } : { op: "record.claim", ...fields, expect },
      {
        op: "record.put",
        kind: APPROVAL_PENDING_KIND,
        key: record.approval_id,
        session_id: record.session_id,
        value: record.status === "pending" ? JSON.stringify({ approval_id: record.approval_id }) : null,
        updated_at: this.clock.now(),
      },
      ...extra,
    ]);
  }
}
