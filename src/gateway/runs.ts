// The runs API's registry: a run is one agent turn started in the background, with a durable,
// numbered event log (run-log.ts) that clients replay and follow. It keeps this gateway's runs in
// process: it starts runs (one per Idempotency-Key, also after a restart), stops them, settles at
// startup the runs whose turn no longer runs, attaches resumed turns to their run, and prunes old
// runs. What it asks of a store other gateways share (claiming a key, a stop for another gateway's
// run, a gone gateway's runs, waking followers) is run-shared.ts; a run's stored turn, run-turn.ts.
import type { ApprovalBook } from "../agent/approvals/approval-book.js";
import {
  type ApprovalDecision,
  type ApprovalRecord,
  listApprovals,
} from "../agent/approvals/approval-records.js";
import type { Scheduler } from "../agent/scheduler.js";
import { TurnInterrupt } from "../agent/turn-failure.js";
import type { TurnRequest } from "../agent/turn-request.js";
import { TenaxError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { localOwners, type Owners } from "../core/owners.js";
import type { StorePort } from "../store/port.js";
import type { ChatMessage } from "./chat-request.js";
import type { Gateway, LaunchedTurn, TurnWatcher } from "./gateway.js";
import { RunLog, type RunLogDeps } from "./run-log.js";
import { keyReused, notStarted, outcomeOf, runError, thrownError } from "./run-outcomes.js";
import {
  eventKey,
  listRuns,
  putOp,
  RUN_EVENT_KIND,
  RUN_IDEM_KIND,
  RUN_KIND,
  RUN_STOP_KIND,
  type RunEvent,
  type RunState,
  readEvents,
  readRun,
} from "./run-records.js";
import { SharedRuns } from "./run-shared.js";
import { runTurnId, storedTurnOutcome } from "./run-turn.js";

export { fingerprint } from "./run-outcomes.js";
export type { RunEvent, RunState, RunStatus } from "./run-records.js";

export interface RunRegistryOptions {
  store: StorePort;
  gateway: Pick<Gateway, "launch" | "interrupt" | "isRunning">;
  now?: () => number;
  /** How long an ended run and its events are kept (gateway.run_retention_hours). */
  retentionMs?: number;
  /** Group-commit timing, for tests; a short timer by default. */
  defer?: RunLogDeps["defer"];
  /** Where failures of background work are told (a commit, a prune). */
  onError?: (what: string, error: unknown) => void;
  /** The agent's approvals, decided through POST /v1/runs/ID/approvals/APPROVAL_ID. */
  approvals?: ApprovalBook;
  /** Who runs each run, and whether another gateway's owner has ended (core/owners.ts). */
  owners?: Owners;
  /** How long a submission waits for the run another gateway is starting for its key (ms). */
  keyWaitMs?: number;
}

export interface RunSubmission {
  /** Continue this session (X-Session-Id), as /v1/chat/completions does. */
  sessionId?: string;
  /** For a new session: the conversation before the new user message. */
  earlier?: ChatMessage[];
  text: string;
  /** What the client asks of the turn's model calls (system text, output cap, sampling, ...). */
  request?: TurnRequest;
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
  /** Runs waiting behind their session's running turn, by run id: aborting one stops it. */
  private readonly waiting = new Map<string, AbortController>();
  private readonly store: StorePort;
  private readonly now: () => number;
  private readonly owners: Owners;
  private readonly shared: SharedRuns;

  constructor(private readonly options: RunRegistryOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.owners = options.owners ?? localOwners();
    this.shared = new SharedRuns({
      store: this.store,
      now: this.now,
      owners: this.owners,
      ...(options.keyWaitMs === undefined ? {} : { keyWaitMs: options.keyWaitMs }),
      runState: (runId) => this.get(runId),
    });
  }

  /**
   * Start a run, or find the run an Idempotency-Key already names. The key is checked and claimed
   * before the first await, so two concurrent submissions with one key start one turn.
   */
  async submit(submission: RunSubmission): Promise<Submitted> {
    const key = submission.idempotencyKey;
    if (key === undefined) return this.start(submission).then((state) => ({ state, created: true }));
    const claim = this.claims.get(key);
    if (claim) {
      if (claim.fingerprint !== submission.fingerprint) return Promise.reject(keyReused(key));
      return claim.run.then(async (state) => ({
        state: (await this.get(state.run_id)) ?? state,
        created: false,
      }));
    }
    const found = await this.shared.claimKey(key, submission.fingerprint);
    if ("state" in found) return { state: found.state, created: false };
    const run = this.start(submission, found.runId);
    this.claims.set(key, { fingerprint: submission.fingerprint, run });
    const release = () => this.claims.delete(key);
    // A submission the gateway refused frees the key, here and in the store.
    run.then(release, async () => {
      release();
      await this.shared.releaseKey(key);
    });
    return run.then((s) => ({ state: s, created: true }));
  }

  /**
   * A run's state as last committed (never ahead of its stored events, so a client that reads
   * "completed" finds run.finished in the events); null when unknown.
   */
  async get(runId: string): Promise<RunState | null> {
    return this.live.get(runId)?.committed ?? (await readRun(this.store, runId));
  }

  /** The log of a run whose terminal event is not yet published, to follow live. */
  following(runId: string): RunLog | undefined {
    const log = this.live.get(runId);
    return log && !log.done ? log : undefined;
  }

  /**
   * Resolves after `ms`, or sooner when another gateway of a shared store commits events of this
   * run (a wake-up: the caller reads the store either way).
   */
  waitForEvents(runId: string, ms: number): Promise<void> {
    return this.shared.waitForEvents(runId, ms);
  }

  /** The committed events of a run after an event id. */
  async events(state: RunState, after: number): Promise<RunEvent[]> {
    return await readEvents(this.store, state, after);
  }

  /**
   * Decide one of the run's approvals (POST /v1/runs/ID/approvals/APPROVAL_ID). Throws a
   * TenaxError `not_found` when the run's turn never asked for it, `already_decided` when it is
   * not pending any more.
   */
  async decideApproval(
    state: RunState,
    approvalId: string,
    decision: ApprovalDecision,
  ): Promise<ApprovalRecord> {
    const book = this.options.approvals;
    const record = (await book?.get(approvalId)) ?? null;
    const turnId = await runTurnId(this.store, state);
    if (!book || !record || record.session_id !== state.session_id || record.turn_id !== turnId) {
      throw new TenaxError("not_found", `run ${state.run_id} has no approval ${approvalId}`, {
        hint: `its approvals are listed by GET /v1/runs/${state.run_id}/approvals`,
      });
    }
    return book.decide(
      approvalId,
      decision,
      `runs API (POST /v1/runs/${state.run_id}/approvals/${approvalId})`,
    );
  }

  /** The approvals the run's turn asked for, oldest first. */
  async approvalsOf(state: RunState): Promise<ApprovalRecord[]> {
    const turnId = await runTurnId(this.store, state);
    if (turnId === null || !this.options.approvals) return [];
    return (await listApprovals(this.store, state.session_id)).filter((r) => r.turn_id === turnId);
  }

  /**
   * Interrupt a run, whichever gateway runs it: here at once; on another gateway (a shared store)
   * by a stop request in the store that its owner acts on within about a second. False when it
   * has ended (or runs nowhere).
   */
  async stop(runId: string, reason: string): Promise<boolean> {
    const log = this.following(runId);
    if (log && !log.finished) return this.stopHere(log, reason);
    const stored = await readRun(this.store, runId);
    if (stored === null || (stored.status !== "running" && stored.status !== "queued")) return false;
    return this.shared.requestStop(stored, reason);
  }

  private stopHere(log: RunLog, reason: string): boolean {
    const runId = log.state.run_id;
    const waiting = this.waiting.get(runId);
    if (waiting) {
      log.append({ type: "run.stop_requested", reason });
      waiting.abort(new TurnInterrupt("stopped", reason));
      return true;
    }
    if (!this.options.gateway.interrupt(log.state.session_id, reason, "stopped")) return false;
    log.append({ type: "run.stop_requested", reason });
    return true;
  }

  /** Runs waiting here that another gateway was asked to stop (a stop request in the store). */
  private async stopRequestedElsewhere(): Promise<void> {
    for (const runId of [...this.waiting.keys()]) {
      const log = this.live.get(runId);
      const reason = await this.shared.stopRequest(runId);
      if (log && reason !== null) this.stopHere(log, reason);
    }
  }

  /** Resolves once every run that was running here has committed its terminal event. */
  async settled(): Promise<void> {
    await this.settleOrphans();
    await Promise.all([...this.live.values()].map((log) => log.ended));
  }

  /**
   * A resumed turn ends its run on `turn_finished`; should it stop without one (it threw), its
   * run is settled here from the turn's stored status, once the turn neither runs nor is marked
   * running (a turn about to be resumed is). Runs at shutdown and with the prune job.
   */
  async settleOrphans(): Promise<number> {
    let settled = 0;
    for (const log of this.resumed) {
      const { session_id, turn_id } = log.state;
      if (log.finished || this.options.gateway.isRunning(session_id)) continue;
      const turn = (await this.store.getTurns(session_id)).find((t) => t.id === turn_id);
      if (turn?.status === "running") continue;
      void log.finish(await storedTurnOutcome(this.store, log.state));
      settled++;
    }
    return settled;
  }

  /**
   * For a turn resumed after a restart (it keeps its turn id): a watcher that appends to the run
   * owning that turn, starting with `run.resumed`; undefined when no run owns it.
   */
  async watcherFor(turnId: string, sessionId: string): Promise<TurnWatcher | undefined> {
    const runs = await listRuns(this.store, sessionId);
    let stored = runs.find((r) => r.turn_id === turnId);
    for (const r of runs) {
      if (stored) break;
      if (r.turn_id === null && r.status === "running" && (await runTurnId(this.store, r)) === turnId)
        stored = r;
    }
    if (!stored) return undefined;
    // The resumed turn answers again from its last saved message: the text cut by the crash is
    // not part of its reply.
    const state: RunState = {
      ...stored,
      owner: this.owners.self,
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
    for (const run of await listRuns(this.store)) {
      if ((run.status !== "running" && run.status !== "queued") || this.live.has(run.run_id)) continue;
      if (this.options.gateway.isRunning(run.session_id)) continue;
      if (this.shared.ownedElsewhere(run)) continue;
      await this.settle(run);
      settled++;
    }
    await this.prune();
    return settled;
  }

  /**
   * While the gateway runs: the runs of a gateway that has ended since (a shared store), once
   * nothing will carry them on. A turn still marked running, or interrupted within the last
   * minute, is left to the watchdog, which resumes it and attaches the run here (watcherFor).
   */
  async settleGoneOwners(): Promise<number> {
    let settled = 0;
    for await (const run of this.shared.goneOwnersRuns((runId) => this.live.has(runId))) {
      await this.settle(run);
      settled++;
    }
    return settled;
  }

  private async settle(run: RunState): Promise<void> {
    const log = new RunLog({ ...run }, this.logDeps());
    this.track(log);
    await log.finish(await storedTurnOutcome(this.store, run));
  }

  /** On the agent's scheduler: prune every `pruneMs`, and settle orphaned resumed runs every minute. */
  maintainOn(scheduler: Scheduler, pruneMs = 3_600_000): void {
    scheduler.every("prune runs", pruneMs, () =>
      this.prune().catch((error: unknown) => this.options.onError?.("pruning old runs", error)),
    );
    scheduler.every("settle orphaned runs", 60_000, async () => {
      await this.settleOrphans();
    });
    // A shared store: another gateway's stop of a run waiting here, and a gone gateway's runs.
    scheduler.every("runs: stops from other gateways", 1_000, () => this.stopRequestedElsewhere());
    scheduler.every("runs: settle gone gateways' runs", 10_000, async () => {
      await this.settleGoneOwners();
    });
  }

  /**
   * Delete ended runs older than the retention period: their events, their record and their
   * Idempotency-Key, one transaction per run. Returns the run ids pruned.
   */
  async prune(): Promise<string[]> {
    const cutoff = this.now() - (this.options.retentionMs ?? DAY_MS);
    const old = (await listRuns(this.store)).filter(
      (r) => r.status !== "running" && r.status !== "queued" && (r.ended_at ?? r.created_at) < cutoff,
    );
    for (const run of old) {
      const now = this.now();
      const gone = (kind: string, key: string) => putOp(kind, key, run.session_id, null, now);
      const ops = (await readEvents(this.store, run, 0)).map((e) =>
        gone(RUN_EVENT_KIND, eventKey(run.run_id, e.id)),
      );
      ops.push(gone(RUN_KIND, run.run_id), gone(RUN_STOP_KIND, run.run_id));
      if (run.idempotency_key !== null) ops.push(gone(RUN_IDEM_KIND, run.idempotency_key));
      await this.store.write(ops);
    }
    return old.map((r) => r.run_id);
  }

  private async start(submission: RunSubmission, claimedId?: string): Promise<RunState> {
    const created = this.now();
    const runId = claimedId ?? newId("run_", created);
    const key = submission.idempotencyKey ?? null;
    const log = new RunLog(this.newState(runId, created, key), this.logDeps(), { held: true });
    const stopper = new AbortController();
    const { launched, queued } = this.launch(submission, log, stopper.signal);
    const place = await queued;
    const { sessionId, first } =
      place === null ? await this.started(log, launched) : this.queued(log, launched, place, stopper);
    this.track(log);
    // The run and its key are committed before the client hears the run id.
    // Deleting the session deletes its runs, their events and keys, tombstones too.
    await log.begin(
      sessionId,
      first,
      this.shared.keyCommitOps(key, sessionId, runId, submission.fingerprint, created),
    );
    return log.committed ?? { ...log.state };
  }

  private newState(runId: string, created: number, key: string | null): RunState {
    return {
      run_id: runId,
      session_id: "",
      turn_id: null,
      status: "running",
      created_at: created,
      started_at: created,
      ended_at: null,
      reply: "",
      partial: false,
      error: null,
      last_event_id: 0,
      idempotency_key: key,
      owner: this.owners.self,
    };
  }

  /**
   * Launch the run's turn through the gateway, its events going to the run's log. `queued`
   * resolves with the run's place when its session is busy, else with null once launched (or
   * refused): launch calls onQueued before its promise settles (it first reads the store, so not
   * before it returns), so once either happened, whether the run waits is known.
   */
  private launch(
    submission: RunSubmission,
    log: RunLog,
    signal: AbortSignal,
  ): { launched: Promise<LaunchedTurn>; queued: Promise<QueuePlace | null> } {
    let place: QueuePlace | null = null;
    let toldQueued: () => void = () => {};
    const queuedNow = new Promise<void>((resolve) => {
      toldQueued = resolve;
    });
    const launched = this.options.gateway.launch({
      ...(submission.sessionId !== undefined
        ? { sessionId: submission.sessionId }
        : { earlier: submission.earlier ?? [] }),
      text: submission.text,
      ...(submission.request === undefined ? {} : { request: submission.request }),
      watcher: {
        onEvent: (event) => log.onAgentEvent(event),
        shutdown: (message) => log.append({ type: "run.shutdown", message }),
      },
      signal,
      approvals: { requestedBy: `runs API, run ${log.state.run_id}` },
      onQueued: (sessionId, position) => {
        place = { sessionId, position };
        toldQueued();
      },
    });
    const queued = Promise.race([queuedNow, launched.then(NOTHING, NOTHING)]).then(() => place);
    return { launched, queued };
  }

  /** A run whose turn started at once: `run.started` first. */
  private async started(log: RunLog, launched: Promise<LaunchedTurn>): Promise<FirstEvent> {
    const turn = await launched;
    follow(log, turn);
    const first = { type: "run.started", run_id: log.state.run_id, session_id: turn.sessionId };
    return { sessionId: turn.sessionId, first };
  }

  /** Behind the session's running turn: the run is `queued` (and stoppable) until it starts. */
  private queued(
    log: RunLog,
    launched: Promise<LaunchedTurn>,
    place: QueuePlace,
    stopper: AbortController,
  ): FirstEvent {
    const { state } = log;
    const runId = state.run_id;
    const sessionId = place.sessionId;
    Object.assign(state, { status: "queued", started_at: null });
    this.waiting.set(runId, stopper);
    launched.then(
      (turn) => {
        this.waiting.delete(runId);
        Object.assign(state, { status: "running", started_at: this.now() });
        log.append({ type: "run.started", run_id: runId, session_id: sessionId });
        follow(log, turn);
      },
      (error: unknown) => {
        this.waiting.delete(runId);
        void log.finish(notStarted(error));
      },
    );
    const first = { type: "run.queued", run_id: runId, session_id: sessionId, position: place.position };
    return { sessionId, first };
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
}

const NOTHING = (): void => {};

/** Where a queued run waits: its session and its place in the session's queue. */
interface QueuePlace {
  sessionId: string;
  position: number;
}

/** The session a run's turn is in, and the run's first event. */
interface FirstEvent {
  sessionId: string;
  first: { type: string; [field: string]: unknown };
}

/** The run ends with its turn's result (or, should the turn throw, as failed). */
function follow(log: RunLog, turn: LaunchedTurn): void {
  void turn.result.then(
    (result) => log.finish(outcomeOf(result)),
    (error: unknown) =>
      log.finish({ status: "failed", reply: log.state.reply, partial: true, error: thrownError(error) }),
  );
}
