// The event log of one run of the runs API: events numbered 1, 2, 3… per run, committed to the
// store's records table before any client hears of them (persist, then publish). Events that
// arrive within one tick are written in one transaction, with the run's state, and text deltas of
// the same tick become one `text` event, so a fast token stream is not one commit per token.
import type { AgentEvent } from "../agent/turn.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import {
  eventKey,
  FINISHED,
  putOp,
  RUN_EVENT_KIND,
  RUN_KIND,
  type RunEvent,
  type RunOutcome,
  type RunState,
} from "./run-records.js";

/** Where a shared store wakes the followers of a run whose events were just committed. */
export const RUN_EVENTS_CHANNEL = "tenax_run_events";

export interface RunLogDeps {
  store: StorePort;
  now: () => number;
  /** Runs `fn` once the current tick's events are in (group commit); a timer by default. */
  defer?: (fn: () => void) => void;
  /** A commit that failed: its events are still published, so live clients go on. */
  onError?: (error: unknown) => void;
}

type Pending = RunEvent["data"];

export class RunLog {
  private pending: Pending[] = [];
  private extra: WriteOp[] = [];
  private readonly subscribers = new Set<(event: RunEvent) => void>();
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** Events wait until the run's session is known (begin). */
  private held: boolean;
  private terminal = false;
  private closed = false;
  private snapshot: RunState | null = null;
  private markEnded!: () => void;
  /** Resolves once the terminal event is committed and published. */
  readonly ended = new Promise<void>((resolve) => {
    this.markEnded = resolve;
  });

  constructor(
    readonly state: RunState,
    private readonly deps: RunLogDeps,
    options: { held?: boolean } = {},
  ) {
    this.held = options.held ?? false;
  }

  /** The terminal event is pending or written: the log takes no more events. */
  get finished(): boolean {
    return this.terminal;
  }

  /** The terminal event is committed and published: there is nothing left to follow. */
  get done(): boolean {
    return this.closed;
  }

  /** The state as of the last commit: what a client may rely on (its events are stored). */
  get committed(): RunState | null {
    return this.snapshot === null ? null : { ...this.snapshot };
  }

  /** Release held events once the session is known; resolves when they (and `first`) are committed. */
  begin(sessionId: string, first: Pending, ops: WriteOp[] = []): Promise<void> {
    this.state.session_id = sessionId;
    this.pending.unshift(first);
    this.extra.push(...ops);
    this.held = false;
    return this.flush();
  }

  /** An event of the run's turn: it also moves the run's state (turn id, reply so far). */
  onAgentEvent(event: AgentEvent): void {
    if (event.type === "turn_started") this.state.turn_id = event.turn_id;
    if (event.type === "text") this.state.reply += event.delta;
    // A model call started over (a retry, another model): what it had said is not part of the reply.
    if ((event.type === "stream_restart" || event.type === "fallback") && event.discard_chars > 0)
      this.state.reply = this.state.reply.slice(
        0,
        Math.max(0, this.state.reply.length - event.discard_chars),
      );
    // Agent events are plain JSON values; the cast only widens the union to a record.
    this.append(event as unknown as Pending);
  }

  append(data: Pending): void {
    if (this.terminal) return;
    this.pending.push(data);
    this.schedule();
  }

  /** The terminal event: the run's state takes the outcome, and the log takes no more events. */
  finish(outcome: RunOutcome): Promise<void> {
    if (this.terminal) return this.ended;
    Object.assign(this.state, outcome, { ended_at: this.deps.now() });
    this.pending.push({ type: FINISHED, ...outcome });
    this.terminal = true;
    void this.flush();
    return this.ended;
  }

  /** Hear every event published from now on; returns the unsubscribe. */
  subscribe(listener: (event: RunEvent) => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  /** Commit what is pending (one transaction), then publish it; calls are serialized. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.commit());
    return this.chain;
  }

  private schedule(): void {
    if (this.scheduled || this.held) return;
    this.scheduled = true;
    const defer = this.deps.defer ?? ((fn: () => void) => setTimeout(fn, 10));
    defer(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async commit(): Promise<void> {
    if (this.held) return;
    const batch = coalesce(this.pending.splice(0));
    const ops = this.extra.splice(0);
    if (batch.length === 0 && ops.length === 0) return;
    const now = this.deps.now();
    const events = batch.map((data) => ({ id: ++this.state.last_event_id, type: data.type, data }));
    const endsHere = events.some((e) => e.type === FINISHED);
    const { run_id, session_id } = this.state;
    for (const event of events)
      ops.push(putOp(RUN_EVENT_KIND, eventKey(run_id, event.id), session_id, event, now));
    const snapshot = { ...this.state };
    ops.push(putOp(RUN_KIND, run_id, session_id, snapshot, now));
    try {
      await this.deps.store.write(ops);
      // Followers on other gateways of a shared store read the store: wake them.
      void this.deps.store.notify?.(RUN_EVENTS_CHANNEL, run_id).catch(() => {});
    } catch (error) {
      this.deps.onError?.(error);
    }
    this.snapshot = snapshot;
    for (const event of events)
      for (const listener of [...this.subscribers]) {
        try {
          listener(event);
        } catch {
          // A broken client never stops the log or the other clients.
        }
      }
    if (endsHere) {
      this.closed = true;
      this.subscribers.clear();
      this.markEnded();
    }
  }
}

/** Consecutive text deltas become one event; everything else keeps its place. */
function coalesce(batch: Pending[]): Pending[] {
  const out: Pending[] = [];
  for (const data of batch) {
    const last = out[out.length - 1];
    if (data.type === "text" && last?.type === "text")
      out[out.length - 1] = { ...last, delta: `${String(last.delta)}${String(data.delta)}` };
    else out.push(data);
  }
  return out;
}
