// The runs API where several gateways share one store (PostgreSQL; on SQLite the same code runs
// with one gateway): the Idempotency-Key claimed in the store so one gateway starts the key's run,
// a stop written to the store for a run another gateway runs (and read back by its owner), the
// choice of a gone gateway's runs to settle, and the wake-up of a follower of another gateway's
// run. It keeps no runs itself: the registry (runs.ts) says which runs are its own.
import { STOP_KIND, type StopRecord } from "../agent/turn-progress.js";
import { newId } from "../core/ids.js";
import type { Owners } from "../core/owners.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { isRecordConflict } from "../store/record-ops.js";
import { RUN_EVENTS_CHANNEL } from "./run-log.js";
import { keyPending, keyReused } from "./run-outcomes.js";
import {
  idemClaimOp,
  listRuns,
  putOp,
  RUN_IDEM_KIND,
  RUN_STOP_KIND,
  type RunState,
  readIdem,
} from "./run-records.js";
import { runTurn } from "./run-turn.js";

export interface SharedRunsOptions {
  store: StorePort;
  now: () => number;
  /** Whether a run's owner (another gateway) has ended (core/owners.ts). */
  owners: Owners;
  /** How long a submission waits for the run another gateway is starting for its key (ms). */
  keyWaitMs?: number;
  /** A run's state as the registry knows it (its live log's last commit, else the store's). */
  runState: (runId: string) => Promise<RunState | null>;
}

/** What claiming a key gave: the id for a new run, or the run that already holds the key. */
export type KeyClaim = { runId: string } | { state: RunState };

/** How often a submission looks again for the run another gateway is starting for its key. */
const KEY_POLL_MS = 100;
/** A key claimed this long ago whose run never appeared: its gateway died before starting it. */
const ABANDONED_CLAIM_MS = 30_000;
/** An interrupted turn of a gone gateway is left this long for the watchdog to resume. */
const RESUME_WINDOW_MS = 60_000;

export class SharedRuns {
  private readonly store: StorePort;
  private readonly now: () => number;

  constructor(private readonly options: SharedRunsOptions) {
    this.store = options.store;
    this.now = options.now;
  }

  /**
   * The key claimed in the store for a new run (one gateway wins it), or the run that holds it:
   * committed, or being started by another gateway (waited for up to keyWaitMs, then a 409 to
   * retry). A claim whose run never appeared within ABANDONED_CLAIM_MS was left by a gateway that
   * died before starting it, and a key whose run is gone names nothing: either is taken over.
   */
  async claimKey(key: string, fingerprint: string): Promise<KeyClaim> {
    const until = this.now() + (this.options.keyWaitMs ?? 5_000);
    for (;;) {
      const text = await this.store.getRecordText(RUN_IDEM_KIND, key);
      const held = text === null ? "free" : await this.holder(key, fingerprint, until);
      if (held === "wait") continue;
      if (held !== "free") return { state: held };
      const runId = newId("run_", this.now());
      try {
        const claim = { run_id: runId, fingerprint, claimed_at: this.now() };
        await this.store.write([idemClaimOp(key, claim, text, this.now())]);
        return { runId };
      } catch (error) {
        // Another gateway claimed it between the read and the write: its run is the one.
        if (!isRecordConflict(error)) throw error;
      }
    }
  }

  /**
   * Who holds a stored key: its run; "free" when nothing does (no readable record, or a claim
   * abandoned); "wait" after a pause when another gateway is still starting its run.
   */
  private async holder(key: string, fingerprint: string, until: number): Promise<RunState | "free" | "wait"> {
    const known = await readIdem(this.store, key);
    if (known === null) return "free";
    if (known.fingerprint !== fingerprint) throw keyReused(key);
    const state = await this.options.runState(known.run_id);
    if (state !== null) return state;
    // A committed key (no claim time) whose run is gone, or a claim whose run never came.
    const claimedAt = known.claimed_at ?? null;
    if (claimedAt === null || this.now() - claimedAt > ABANDONED_CLAIM_MS) return "free";
    if (this.now() >= until) throw keyPending(key);
    await new Promise((resolve) => setTimeout(resolve, KEY_POLL_MS));
    return "wait";
  }

  /** The key's record once its run is committed (in the run's first write): no claim time. */
  keyCommitOps(
    key: string | null,
    sessionId: string,
    runId: string,
    fingerprint: string,
    at: number,
  ): WriteOp[] {
    return key === null ? [] : [putOp(RUN_IDEM_KIND, key, sessionId, { run_id: runId, fingerprint }, at)];
  }

  /** A submission the gateway refused frees its key in the store. */
  async releaseKey(key: string): Promise<void> {
    await this.store.write([putOp(RUN_IDEM_KIND, key, "", null, this.now())]).catch(() => {});
  }

  /**
   * Ask the gateway that runs a stored run to stop it: a queued run by a `run_stop` record (its
   * owner reads it every second, stopRequest), a running turn by a `turn_stop` record (read by
   * TurnProgress). False when the run's turn does not run.
   */
  async requestStop(run: RunState, reason: string): Promise<boolean> {
    const at = this.now();
    if (run.status === "queued") {
      await this.store.write([
        putOp(RUN_STOP_KIND, run.run_id, run.session_id, { reason, requested_at: at }, at),
      ]);
      return true;
    }
    const turn = await runTurn(this.store, run);
    if (turn?.status !== "running") return false;
    const request: StopRecord = {
      session_id: run.session_id,
      turn_id: turn.id,
      requested_at: at,
      by: reason,
    };
    await this.store.putRecord(STOP_KIND, turn.id, request, { sessionId: run.session_id });
    return true;
  }

  /** The reason of a stop another gateway asked of a queued run (requestStop); null when none. */
  async stopRequest(runId: string): Promise<string | null> {
    return (await this.store.getRecord<{ reason: string }>(RUN_STOP_KIND, runId))?.reason ?? null;
  }

  /** Another gateway's run is its own while that gateway may live. */
  ownedElsewhere(run: RunState): boolean {
    return run.owner !== null && ["alive", "unknown"].includes(this.options.owners.state(run.owner));
  }

  /**
   * The stored runs of a gateway that has ended, once nothing will carry them on, skipping those
   * `isHere` names: a turn still marked running, or interrupted within the last minute, is left
   * to the watchdog, which resumes it and the registry attaches the run (watcherFor). Yields one
   * run at a time, so the caller settles each before the next is looked at.
   */
  async *goneOwnersRuns(isHere: (runId: string) => boolean): AsyncGenerator<RunState> {
    for (const run of await listRuns(this.store)) {
      if ((run.status !== "running" && run.status !== "queued") || isHere(run.run_id)) continue;
      if (run.owner === null || this.options.owners.state(run.owner) !== "gone") continue;
      const turn = await runTurn(this.store, run);
      if (turn?.status === "running") continue;
      if (turn?.status === "interrupted" && this.now() - (turn.ended_at ?? 0) < RESUME_WINDOW_MS) continue;
      yield run;
    }
  }

  /**
   * Resolves after `ms`, or sooner when another gateway of a shared store commits events of this
   * run (a wake-up: the caller reads the store either way).
   */
  waitForEvents(runId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let stop: (() => void) | undefined;
      const timer = setTimeout(() => {
        stop?.();
        resolve();
      }, ms);
      stop = this.store.listen?.(RUN_EVENTS_CHANNEL, (payload) => {
        if (payload !== runId) return;
        clearTimeout(timer);
        stop?.();
        resolve();
      });
    });
  }
}
