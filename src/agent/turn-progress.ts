// The one progress tracker of a process's running turns. Each turn notes its progress (provider
// bytes and every event it emits; a tool's output, looked at on each check) and the phase it is in
// (provider call, tool, compression, approval wait). One check every second or so, on the agent's
// scheduler, finds:
// - a turn silent for `stall_after`: stalled. It is told (turn_stalled) and written to the store as a
//   `turn_stall` record, which the health model reads (so /health, `tenax status` and the dashboard
//   name it whichever process runs the turn); it clears by itself on the next progress. A wait for
//   an approval is never a stall: a person is the one to act.
// - a turn running past `turn_deadline` (unless its caller keeps its own, as cron does): ended like
//   an interrupt, with code turn_deadline.
// - a `turn_stop` record naming one of its turns (`tenax sessions stop`, from any process): that
//   turn is interrupted here, by the process that runs it.
// Stop requests go through the store, not a signal or the gateway's HTTP API: every process that
// runs turns (the gateway, `tenax chat`, `tenax cron tick`) already reads it, a record names one
// turn where a signal could only name a process, and it needs neither the API key nor a gateway.
import type { Clock } from "../core/deps.js";
import { TurnInterrupt } from "./turn-failure.js";

/** Where a turn is: what it waits on when it makes no progress. */
export type TurnPhase = "provider" | "tool" | "compression" | "approval";

/** The store record of a stalled turn (kind STALL_KIND, key the turn id). */
export interface StallRecord {
  session_id: string;
  turn_id: string;
  phase: TurnPhase;
  /** When the turn last made progress (ms since the epoch). */
  progress_at: number;
  started_at: number;
  /** The process that runs it, as leases name it ("pid:N"). */
  owner: string;
}

/** The store record asking the process that runs a turn to end it (kind STOP_KIND, key the turn id). */
export interface StopRecord {
  session_id: string;
  turn_id: string;
  requested_at: number;
  /** Who asked, for the turn's marker and the log. */
  by: string;
}

export const STALL_KIND = "turn_stall";
export const STOP_KIND = "turn_stop";

interface ProgressEventBase {
  layer: "lifecycle";
  session_id: string;
  turn_id: string;
  phase: TurnPhase;
  message: string;
}

/** What the tracker tells of a turn: through the turn's own listeners, so every client and the feed hear it. */
export type ProgressEvent =
  /** No progress for `elapsed_ms` (at least stall_after). */
  | (ProgressEventBase & { type: "turn_stalled"; elapsed_ms: number; stall_after_ms: number })
  /** Progress again after `elapsed_ms` of silence. */
  | (ProgressEventBase & { type: "turn_stall_cleared"; elapsed_ms: number })
  /** Ended after running `elapsed_ms` (at least turn_deadline). */
  | (ProgressEventBase & { type: "turn_deadline"; elapsed_ms: number; turn_deadline_ms: number })
  /** Asked to stop from outside (`tenax sessions stop`). */
  | (ProgressEventBase & { type: "turn_stop_requested"; elapsed_ms: number; by: string });

/** The part of the store the tracker uses (src/store/store.ts is one). */
export interface ProgressStore {
  putRecord(
    kind: string,
    key: string,
    value: unknown,
    options?: { sessionId?: string | null },
  ): Promise<void>;
  getRecord<T>(kind: string, key: string): Promise<T | null>;
}

export interface TurnProgressOptions {
  clock: Clock;
  stallAfterMs: number;
  deadlineMs: number;
  store: ProgressStore;
  /** This process as leases name it. */
  owner?: string;
  /** Where a failed record write is told (the tracker goes on). */
  onError?: (error: unknown) => void;
}

export interface BeginInput {
  sessionId: string;
  turnId: string;
  /** False when the caller keeps its own deadline (cron's --timeout): stalls are still reported. */
  deadline: boolean;
  emit(event: ProgressEvent): void;
  /** End the turn (abort its signal) with this reason. */
  stop(reason: TurnInterrupt): void;
  /** Bytes the turn's processes have written so far: output while in a tool is progress. */
  outputBytes?: () => number;
}

/** One running turn, as its own code sees it: note progress, say where it is, end it. */
export interface TrackedTurn {
  /** Something happened: a provider's bytes, an event. Cheap: called for every chunk. */
  progress(): void;
  /** The turn moves to another phase (which is progress too). */
  enter(phase: TurnPhase): void;
  /** The turn settled: forget it, and take its stall record back. */
  end(): Promise<void>;
}

interface Entry extends BeginInput {
  startedAt: number;
  progressAt: number;
  phase: TurnPhase;
  stalled: boolean;
  /** Told to stop (deadline, stop request): it is not told again while it winds down. */
  stopping: boolean;
  ended: boolean;
  output: number;
}

export class TurnProgress {
  private readonly turns = new Map<string, Entry>();
  private readonly owner: string;
  private writes: Promise<void> = Promise.resolve();

  constructor(private readonly options: TurnProgressOptions) {
    this.owner = options.owner ?? `pid:${process.pid}`;
  }

  /** How often to look: often enough that a stall is seen within a second or so of stall_after. */
  get checkEveryMs(): number {
    return Math.max(100, Math.min(1000, Math.floor(this.options.stallAfterMs / 2)));
  }

  begin(input: BeginInput): TrackedTurn {
    const now = this.options.clock.now();
    const entry: Entry = {
      ...input,
      startedAt: now,
      progressAt: now,
      phase: "provider",
      stalled: false,
      stopping: false,
      ended: false,
      output: input.outputBytes?.() ?? 0,
    };
    this.turns.set(input.turnId, entry);
    return {
      progress: () => this.progress(entry),
      enter: (phase) => {
        entry.phase = phase;
        this.progress(entry);
      },
      end: () => this.end(entry),
    };
  }

  /** Progress of whatever turn runs on this session here (events raised outside a turn's own calls). */
  progressOf(sessionId: string): void {
    for (const entry of this.turns.values()) if (entry.sessionId === sessionId) this.progress(entry);
  }

  /** The turns running here, for a look (tests, the drill). */
  running(): { session_id: string; turn_id: string; phase: TurnPhase; stalled: boolean }[] {
    return [...this.turns.values()].map((e) => ({
      session_id: e.sessionId,
      turn_id: e.turnId,
      phase: e.phase,
      stalled: e.stalled,
    }));
  }

  /** One look at every running turn: stop requests, deadlines, stalls. */
  async check(): Promise<void> {
    // Never waits on the store's writes: a store that hangs does not keep a deadline from ending a turn.
    const now = this.options.clock.now();
    for (const entry of [...this.turns.values()]) {
      if (entry.ended || entry.stopping) continue;
      if (await this.stopRequested(entry, now)) continue;
      const ran = now - entry.startedAt;
      if (entry.deadline && ran >= this.options.deadlineMs) {
        this.deadline(entry, ran);
        continue;
      }
      if (entry.phase === "tool" && entry.outputBytes) {
        const output = entry.outputBytes();
        if (output !== entry.output) {
          entry.output = output;
          this.progress(entry);
        }
      }
      const silent = now - entry.progressAt;
      if (!entry.stalled && entry.phase !== "approval" && silent >= this.options.stallAfterMs)
        this.stall(entry, silent);
    }
  }

  private progress(entry: Entry): void {
    const now = this.options.clock.now();
    const silent = now - entry.progressAt;
    entry.progressAt = now;
    if (!entry.stalled || entry.ended) return;
    entry.stalled = false;
    entry.emit({
      type: "turn_stall_cleared",
      layer: "lifecycle",
      session_id: entry.sessionId,
      turn_id: entry.turnId,
      phase: entry.phase,
      elapsed_ms: silent,
      message: `turn ${entry.turnId} of session ${entry.sessionId} made progress again after ${seconds(silent)} without any (${phaseWords(entry.phase)})`,
    });
    void this.write(STALL_KIND, entry, null);
  }

  private stall(entry: Entry, silent: number): void {
    entry.stalled = true;
    entry.emit({
      type: "turn_stalled",
      layer: "lifecycle",
      session_id: entry.sessionId,
      turn_id: entry.turnId,
      phase: entry.phase,
      elapsed_ms: silent,
      stall_after_ms: this.options.stallAfterMs,
      message: `turn ${entry.turnId} of session ${entry.sessionId} is stalled: no progress for ${seconds(silent)} (${phaseWords(entry.phase)}); end it with: tenax sessions stop ${entry.sessionId}`,
    });
    const record: StallRecord = {
      session_id: entry.sessionId,
      turn_id: entry.turnId,
      phase: entry.phase,
      progress_at: entry.progressAt,
      started_at: entry.startedAt,
      owner: this.owner,
    };
    void this.write(STALL_KIND, entry, record);
  }

  private deadline(entry: Entry, ran: number): void {
    const limit = this.options.deadlineMs;
    entry.stopping = true;
    const message = `turn ${entry.turnId} of session ${entry.sessionId} ran for ${seconds(ran)}, past agent.turn_deadline (${seconds(limit)}), and is ended (while ${phaseWords(entry.phase)})`;
    entry.emit({
      type: "turn_deadline",
      layer: "lifecycle",
      session_id: entry.sessionId,
      turn_id: entry.turnId,
      phase: entry.phase,
      elapsed_ms: ran,
      turn_deadline_ms: limit,
      message,
    });
    entry.stop(
      new TurnInterrupt(
        "turn_deadline",
        `it ran past agent.turn_deadline (${seconds(limit)}) while ${phaseWords(entry.phase)}`,
      ),
    );
  }

  /** Resolves once every record write asked for so far is done (or failed and was told). */
  settled(): Promise<void> {
    return this.writes;
  }

  /** Whether someone asked (through the store) to stop this turn; it is stopped if so. */
  private async stopRequested(entry: Entry, now: number): Promise<boolean> {
    let request: StopRecord | null;
    try {
      request = await this.options.store.getRecord<StopRecord>(STOP_KIND, entry.turnId);
    } catch (error) {
      this.options.onError?.(error);
      return false;
    }
    if (request === null) return false;
    entry.stopping = true;
    entry.emit({
      type: "turn_stop_requested",
      layer: "lifecycle",
      session_id: entry.sessionId,
      turn_id: entry.turnId,
      phase: entry.phase,
      elapsed_ms: now - entry.startedAt,
      by: request.by,
      message: `turn ${entry.turnId} of session ${entry.sessionId} is stopped: asked by ${request.by}`,
    });
    entry.stop(new TurnInterrupt("stopped", `stopped by ${request.by}`));
    return true;
  }

  private async end(entry: Entry): Promise<void> {
    if (entry.ended) return;
    entry.ended = true;
    this.turns.delete(entry.turnId);
    // A stop request that came as the turn ended is spent too: nothing is left for the store to hold.
    if (entry.stalled) await this.write(STALL_KIND, entry, null);
    if (await this.hasStopRequest(entry)) await this.write(STOP_KIND, entry, null);
  }

  private async hasStopRequest(entry: Entry): Promise<boolean> {
    try {
      return (await this.options.store.getRecord<StopRecord>(STOP_KIND, entry.turnId)) !== null;
    } catch {
      return false;
    }
  }

  /** Record writes, one after another: a stall's clear never lands before the stall itself. */
  private write(kind: string, entry: Entry, value: unknown): Promise<void> {
    this.writes = this.writes.then(() =>
      this.options.store
        .putRecord(kind, entry.turnId, value, { sessionId: entry.sessionId })
        .catch((error: unknown) => this.options.onError?.(error)),
    );
    return this.writes;
  }
}

/** Where a turn is, in words. */
export function phaseWords(phase: TurnPhase): string {
  switch (phase) {
    case "provider":
      return "waiting on the provider call";
    case "tool":
      return "running a tool";
    case "compression":
      return "compressing the context";
    case "approval":
      return "waiting for an approval";
    default: {
      const never: never = phase;
      return String(never);
    }
  }
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms / 1000)} s`;
}
