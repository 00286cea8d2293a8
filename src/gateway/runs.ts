// The runs API's registry: a run is one agent turn started in the background, with a durable,
// numbered event log (run-log.ts) that clients replay and follow. It claims Idempotency-Keys so a
// retried submission finds its run (also after a restart), stops runs, settles at startup the runs
// whose turn no longer runs, attaches resumed turns to their run, and prunes old runs.
import { createHash } from "node:crypto";
import type { Scheduler } from "../agent/scheduler.js";
import type { TurnResult } from "../agent/turn.js";
import type { TurnFailure } from "../agent/turn-failure.js";
import { newId } from "../core/ids.js";
import { HttpError } from "../http/http-error.js";
import type { Store } from "../store/store.js";
import type { ChatMessage } from "./chat-request.js";
import { wireError } from "./failure-status.js";
import type { Gateway, TurnWatcher } from "./gateway.js";
import { storeUnavailable } from "./gateway-errors.js";
import { RunLog, type RunLogDeps } from "./run-log.js";
import {
  eventKey,
  listRuns,
  putOp,
  RUN_EVENT_KIND,
  RUN_IDEM_KIND,
  RUN_KIND,
  type RunError,
  type RunEvent,
  type RunOutcome,
  type RunState,
  readEvents,
  readIdem,
  readRun,
} from "./run-records.js";

export type { RunEvent, RunState, RunStatus } from "./run-records.js";

export interface RunRegistryOptions {
  store: Store;
  gateway: Pick<Gateway, "launch" | "interrupt" | "isRunning">;
  now?: () => number;
  /** How long an ended run and its events are kept (gateway.run_retention_hours). */
  retentionMs?: number;
  /** Group-commit timing, for tests; a short timer by default. */
  defer?: RunLogDeps["defer"];
  /** Where failures of background work are told (a commit, a prune). */
  onError?: (what: string, error: unknown) => void;
}

export interface RunSubmission {
  /** Continue this session (X-Session-Id), as /v1/chat/completions does. */
  sessionId?: string;
  /** For a new session: the conversation before the new user message. */
  earlier?: ChatMessage[];
  text: string;
  idempotencyKey?: string;
  /** What makes two submissions "the same" for an Idempotency-Key (see fingerprint()). */
  fingerprint: string;
}

export interface Submitted {
  state: RunState;
  /** False when an Idempotency-Key found an earlier run: no new turn was started. */
  created: boolean;
}

const DAY_MS = 24 * 3_600_000;

export class RunRegistry {
  private readonly live = new Map<string, RunLog>();
  /** Logs of resumed turns: they end on `turn_finished`, having no turn result to wait on. */
  private readonly resumed = new Set<RunLog>();
  /** Keys whose run is being started: claimed synchronously, so concurrent retries share it. */
  private readonly claims = new Map<string, { fingerprint: string; run: Promise<RunState> }>();
  private readonly store: Store;
  private readonly now: () => number;

  constructor(private readonly options: RunRegistryOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
  }

  /**
   * Start a run, or find the run an Idempotency-Key already names. The key is checked and claimed
   * before the first await, so two concurrent submissions with one key start one turn.
   */
  submit(submission: RunSubmission): Promise<Submitted> {
    const key = submission.idempotencyKey;
    if (key === undefined) return this.start(submission).then((state) => ({ state, created: true }));
    const claim = this.claims.get(key);
    if (claim) {
      if (claim.fingerprint !== submission.fingerprint) return Promise.reject(keyReused(key));
      return claim.run.then((state) => ({ state: this.get(state.run_id) ?? state, created: false }));
    }
    const known = readIdem(this.store, key);
    const state = known ? this.get(known.run_id) : null;
    if (known && state) {
      if (known.fingerprint !== submission.fingerprint) return Promise.reject(keyReused(key));
      return Promise.resolve({ state, created: false });
    }
    const run = this.start(submission);
    this.claims.set(key, { fingerprint: submission.fingerprint, run });
    // Once started the key is in the store; a submission the gateway refused frees the key.
    const release = () => this.claims.delete(key);
    run.then(release, release);
    return run.then((s) => ({ state: s, created: true }));
  }

  /**
   * A run's state as last committed (never ahead of its stored events, so a client that reads
   * "completed" finds run.finished in the events); null when unknown.
   */
  get(runId: string): RunState | null {
    return this.live.get(runId)?.committed ?? readRun(this.store, runId);
  }

  /** The log of a run whose terminal event is not yet published, to follow live. */
  following(runId: string): RunLog | undefined {
    const log = this.live.get(runId);
    return log && !log.done ? log : undefined;
  }

  /** The committed events of a run after an event id. */
  events(state: RunState, after: number): RunEvent[] {
    return readEvents(this.store, state, after);
  }

  /** Interrupt a running run; false when it does not run here (it has ended). */
  stop(runId: string, reason: string): boolean {
    const log = this.following(runId);
    if (!log || log.finished) return false;
    if (!this.options.gateway.interrupt(log.state.session_id, reason, "stopped")) return false;
    log.append({ type: "run.stop_requested", reason });
    return true;
  }

  /** Resolves once every run that was running here has committed its terminal event. */
  async settled(): Promise<void> {
    this.settleOrphans();
    await Promise.all([...this.live.values()].map((log) => log.ended));
  }

  /**
   * A resumed turn ends its run on `turn_finished`; should it stop without one (it threw), its
   * run is settled here from the turn's stored status, once the turn neither runs nor is marked
   * running (a turn about to be resumed is). Runs at shutdown and with the prune job.
   */
  settleOrphans(): number {
    let settled = 0;
    for (const log of this.resumed) {
      const { session_id, turn_id } = log.state;
      if (log.finished || this.options.gateway.isRunning(session_id)) continue;
      const turn = this.store.getTurns(session_id).find((t) => t.id === turn_id);
      if (turn?.status === "running") continue;
      void log.finish(this.outcomeOfStoredTurn(log.state));
      settled++;
    }
    return settled;
  }

  /**
   * For a turn resumed after a restart (it keeps its turn id): a watcher that appends to the run
   * owning that turn, starting with `run.resumed`; undefined when no run owns it.
   */
  watcherFor(turnId: string, sessionId: string): TurnWatcher | undefined {
    const runs = listRuns(this.store, sessionId);
    const stored =
      runs.find((r) => r.turn_id === turnId) ??
      runs.find((r) => r.turn_id === null && r.status === "running" && this.turnIdOf(r) === turnId);
    if (!stored) return undefined;
    // The resumed turn answers again from its last saved message: the text cut by the crash is
    // not part of its reply.
    const state: RunState = {
      ...stored,
      turn_id: turnId,
      status: "running",
      ended_at: null,
      error: null,
      reply: "",
    };
    const log = new RunLog(state, this.logDeps());
    this.track(log);
    this.resumed.add(log);
    void log.ended.then(() => this.resumed.delete(log));
    log.append({ type: "run.resumed", turn_id: turnId });
    return {
      onEvent: (event) => {
        log.onAgentEvent(event);
        if (event.type === "turn_finished")
          void log.finish({
            status: event.status,
            reply: log.state.reply,
            partial: event.partial,
            error: event.failure === null ? null : runError(event.failure),
          });
      },
      shutdown: (message) => log.append({ type: "run.shutdown", message }),
    };
  }

  /**
   * At startup, after resumed turns are wired: a stored run still marked running whose turn no
   * longer runs gets its terminal event (the turn's stored status), so no client waits forever.
   * Old runs are pruned too. Returns how many runs were settled.
   */
  async recover(): Promise<number> {
    let settled = 0;
    for (const run of listRuns(this.store)) {
      if (run.status !== "running" || this.live.has(run.run_id)) continue;
      if (this.options.gateway.isRunning(run.session_id)) continue;
      const log = new RunLog({ ...run }, this.logDeps());
      this.track(log);
      await log.finish(this.outcomeOfStoredTurn(run));
      settled++;
    }
    await this.prune();
    return settled;
  }

  /** On the agent's scheduler: prune every `pruneMs`, and settle orphaned resumed runs every minute. */
  maintainOn(scheduler: Scheduler, pruneMs = 3_600_000): void {
    scheduler.every("prune runs", pruneMs, () =>
      this.prune().catch((error: unknown) => this.options.onError?.("pruning old runs", error)),
    );
    scheduler.every("settle orphaned runs", 60_000, () => {
      this.settleOrphans();
    });
  }

  /**
   * Delete ended runs older than the retention period: their events, their record and their
   * Idempotency-Key, one transaction per run. Returns the run ids pruned.
   */
  async prune(): Promise<string[]> {
    const cutoff = this.now() - (this.options.retentionMs ?? DAY_MS);
    const old = listRuns(this.store).filter(
      (r) => r.status !== "running" && (r.ended_at ?? r.created_at) < cutoff,
    );
    for (const run of old) {
      const now = this.now();
      const gone = (kind: string, key: string) => putOp(kind, key, run.session_id, null, now);
      const ops = readEvents(this.store, run, 0).map((e) => gone(RUN_EVENT_KIND, eventKey(run.run_id, e.id)));
      ops.push(gone(RUN_KIND, run.run_id));
      if (run.idempotency_key !== null) ops.push(gone(RUN_IDEM_KIND, run.idempotency_key));
      await this.store.write(ops);
    }
    return old.map((r) => r.run_id);
  }

  private async start(submission: RunSubmission): Promise<RunState> {
    const created = this.now();
    const runId = newId("run_", created);
    const key = submission.idempotencyKey ?? null;
    const state: RunState = {
      run_id: runId,
      session_id: "",
      turn_id: null,
      status: "running",
      created_at: created,
      ended_at: null,
      reply: "",
      partial: false,
      error: null,
      last_event_id: 0,
      idempotency_key: key,
    };
    const log = new RunLog(state, this.logDeps(), { held: true });
    const watcher: TurnWatcher = {
      onEvent: (event) => log.onAgentEvent(event),
      shutdown: (message) => log.append({ type: "run.shutdown", message }),
    };
    const turn = await this.options.gateway.launch({
      ...(submission.sessionId !== undefined
        ? { sessionId: submission.sessionId }
        : { earlier: submission.earlier ?? [] }),
      text: submission.text,
      watcher,
    });
    this.track(log);
    void turn.result.then(
      (result) => log.finish(outcomeOf(result)),
      (error: unknown) =>
        log.finish({ status: "failed", reply: log.state.reply, partial: true, error: thrownError(error) }),
    );
    // The run and its key are committed before the client hears the run id.
    // Deleting the session deletes its runs, their events and keys, tombstones too.
    const idem =
      key === null
        ? []
        : [
            putOp(
              RUN_IDEM_KIND,
              key,
              turn.sessionId,
              { run_id: runId, fingerprint: submission.fingerprint },
              created,
            ),
          ];
    await log.begin(turn.sessionId, { type: "run.started", run_id: runId, session_id: turn.sessionId }, idem);
    return log.committed ?? { ...log.state };
  }

  /**
   * The run's turn. When the process stopped after the run was committed but before its
   * `turn_started` event was, the record has no turn id: the run's turn is then the session's
   * first turn started at or after the run was created (a run is admitted only while its session
   * runs no turn, and the session's next turn is the one its launch starts).
   */
  private turnIdOf(run: RunState): string | null {
    if (run.turn_id !== null) return run.turn_id;
    const after = this.store
      .getTurns(run.session_id)
      .filter((t) => t.started_at !== null && t.started_at >= run.created_at)
      .sort((a, b) => (a.started_at ?? 0) - (b.started_at ?? 0));
    return after[0]?.id ?? null;
  }

  private track(log: RunLog): void {
    const runId = log.state.run_id;
    this.live.set(runId, log);
    void log.ended.then(() => {
      if (this.live.get(runId) === log) this.live.delete(runId);
    });
  }

  private logDeps(): RunLogDeps {
    return {
      store: this.store,
      now: this.now,
      ...(this.options.defer ? { defer: this.options.defer } : {}),
      onError: (error) => this.options.onError?.("committing run events", error),
    };
  }

  /** How a run whose turn stopped without this process ends: the turn's stored status. */
  private outcomeOfStoredTurn(run: RunState): RunOutcome {
    const turnId = this.turnIdOf(run);
    const turn =
      turnId === null ? undefined : this.store.getTurns(run.session_id).find((t) => t.id === turnId);
    if (!turn)
      return {
        status: "failed",
        reply: run.reply,
        partial: true,
        error: storedError(
          "not_started",
          "unavailable_error",
          "the gateway stopped before the run's turn started",
          "submit it again",
        ),
      };
    if (turn.status === "completed") {
      const answer = this.store
        .getMessages(run.session_id)
        .filter((m) => m.turn_id === turn.id && m.role === "assistant" && m.content !== null)
        .at(-1);
      return { status: "completed", reply: answer?.content ?? run.reply, partial: false, error: null };
    }
    const status = turn.status === "failed" || turn.status === "suspended" ? turn.status : "interrupted";
    // Only the turn's message is stored with it; its code says how it ended.
    const message =
      turn.error ??
      `the gateway stopped while the run's turn was running (turn ${turn.id} is ${turn.status})`;
    return {
      status,
      reply: run.reply,
      partial: true,
      error:
        status === "failed"
          ? storedError(
              "turn_failed",
              "server_error",
              message,
              "submit it again; the message says what failed",
            )
          : status === "suspended"
            ? storedError("suspended", "unavailable_error", message, "submit it again to start over")
            : storedError("interrupted", "unavailable_error", message, "submit it again to start over"),
    };
  }
}

function outcomeOf(result: TurnResult): RunOutcome {
  return {
    status: result.status,
    reply: result.reply,
    partial: result.partial || result.status !== "completed",
    error: result.failure === null ? null : runError(result.failure),
  };
}

/** A run's error: what a chat completion of its turn answers (failure-status.ts), without `param`. */
function runError(failure: TurnFailure): RunError {
  const { param: _param, ...error } = wireError(failure);
  return error;
}

/** A turn that threw (its store refused, a bug): the error the chat route answers for it. */
function thrownError(error: unknown): RunError {
  const refused = storeUnavailable(error);
  if (refused) return { ...storedError(refused.code, refused.type, refused.message, null), layer: "store" };
  const message = `the turn failed: ${error instanceof Error ? error.message : String(error)}`;
  return { ...storedError("turn_failed", "server_error", message, null), layer: "agent" };
}

/** An error known only by its code and message (a stored turn, a turn that threw). */
function storedError(code: string, type: string, message: string, next: string | null): RunError {
  return { message, type, code, layer: null, next, retry_after_ms: null };
}

/** Two submissions are the same when their session header and their body (as JSON) are. */
export function fingerprint(sessionId: string | undefined, body: unknown): string {
  return createHash("sha256")
    .update(canonical({ session_id: sessionId ?? null, body }))
    .digest("hex");
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

function keyReused(key: string): HttpError {
  return new HttpError(
    409,
    "conflict_error",
    "idempotency_key_reused",
    `the Idempotency-Key ${JSON.stringify(key)} was already used for a different request (other body or X-Session-Id); send the same request to get its run, or use a new key for a new run`,
  );
}
