// A turn's start: begun (its question committed with it) or resumed (taken over at a new lease
// epoch), then wired up before anything of it runs: its events held until the start is durable,
// the progress tracker, one abort for everything of it, and the lease's heartbeat. `stop` undoes
// the wiring when the turn settles.
import { heldUntil } from "../core/held-until.js";
import { isLeaseLost } from "../store/lease-fence.js";
import { lostLease } from "./turn-failure.js";
import type { TrackedTurn } from "./turn-progress.js";
import { type ResumePoint, restartTurn } from "./turn-resume.js";
import type { AgentEvent, TurnDeps, TurnInput } from "./turn-types.js";

/** A started turn, as the rest of the turn sees it. */
export interface TurnStart {
  turnId: string;
  /** The lease epoch this process holds: every write of the turn for itself carries it. */
  epoch: number;
  /** Settles when the start is durable; rejects when it cannot be (the turn is then aborted). */
  durable: Promise<unknown>;
  /** Where a resumed turn goes on from; null for a new one. */
  resumed: ResumePoint | null;
  /** The owner of the processes the turn's tools start. */
  taskId: string;
  /** The turn's one abort: the caller's signal, a lost lease, a start that cannot be durable, a stop. */
  controller: AbortController;
  signal: AbortSignal;
  /** The turn as the progress tracker sees it; null when nothing watches it. */
  tracked: TrackedTurn | null;
  /** Tell an event (held until the start is durable); every event is the turn's progress. */
  emit(event: AgentEvent): void;
  /** The turn settled: no more heartbeats, tracking or listening to the caller's signal. */
  stop(): Promise<void>;
}

/** Begin or resume the turn, then wire it up (above). A takeover another process won throws lease_lost. */
export async function startTurn(agent: TurnDeps, input: TurnInput): Promise<TurnStart> {
  const { store, limits } = agent;
  const leaseMs = limits.lease_seconds * 1000;
  const leaseNow = agent.leaseNow ?? (() => agent.deps.clock.now());
  // A takeover another process won throws lease_lost here: nothing of the turn runs.
  const resumed = input.resume
    ? (input.resume.point ??
      (await restartTurn(store, input.sessionId, input.resume.turnId, leaseMs, leaseNow(), agent.turnOwner)))
    : null;
  // Persist before publish: the question is committed with its turn before the model is asked
  // (the transcript holds it), and durable before anyone is told of the turn or any tool runs. Its
  // sync runs while the model answers, and the turn's events wait for it; a caller that tells of
  // the turn only by its answer lets the end's sync (or a tool call's) make it durable.
  let turnId: string;
  let epoch: number;
  let durable: Promise<unknown> = Promise.resolve();
  if (resumed) {
    turnId = resumed.turnId;
    epoch = resumed.epoch;
  } else {
    const begun = store.beginTurn({
      sessionId: input.sessionId,
      leaseMs,
      ...(agent.turnOwner === undefined ? {} : { owner: agent.turnOwner }),
      question: { role: "user", content: input.text },
      ...(input.before === undefined ? {} : { before: input.before }),
      leaseNow: leaseNow(),
      durableWithNext: input.acknowledgedBy === "answer",
    });
    await begun.applied;
    turnId = begun.id;
    epoch = begun.epoch;
    durable = begun.durable;
  }
  return wireTurn(agent, input, { turnId, epoch, durable, resumed, leaseMs, leaseNow });
}

interface Begun {
  turnId: string;
  epoch: number;
  durable: Promise<unknown>;
  resumed: ResumePoint | null;
  leaseMs: number;
  leaseNow: () => number;
}

function wireTurn(agent: TurnDeps, input: TurnInput, begun: Begun): TurnStart {
  const { turnId, durable } = begun;
  const tell = heldUntil(durable, safe(input.onEvent), {
    type: "turn_started",
    session_id: input.sessionId,
    turn_id: turnId,
  });
  const taskId = input.taskId ?? turnId;
  const controller = new AbortController();
  // Every event the turn emits is progress; an approval asked for is a wait for a person, not a stall.
  const tracked =
    agent.progress?.begin({
      sessionId: input.sessionId,
      turnId,
      deadline: input.deadline !== false,
      emit: (event) => tell(event),
      stop: (reason) => controller.abort(reason),
      ...(agent.taskOutput ? { outputBytes: () => agent.taskOutput?.(taskId) ?? 0 } : {}),
    }) ?? null;
  const emit = (event: AgentEvent) => {
    if (event.type === "approval_requested") tracked?.enter("approval");
    else if (event.type === "approval_decided") tracked?.enter("tool");
    else tracked?.progress();
    tell(event);
  };
  // A start that cannot be made durable stops the turn; runTurn then throws its error.
  durable.catch((error: unknown) => controller.abort(error));
  const onAbort = () => controller.abort(input.signal?.reason);
  if (input.signal?.aborted) controller.abort(input.signal.reason);
  else input.signal?.addEventListener("abort", onAbort, { once: true });
  const heartbeat = leaseHeartbeat(agent, begun, controller);
  return {
    turnId,
    epoch: begun.epoch,
    durable,
    resumed: begun.resumed,
    taskId,
    controller,
    signal: controller.signal,
    tracked,
    emit,
    stop: async () => {
      heartbeat.stop();
      await tracked?.end();
      input.signal?.removeEventListener("abort", onAbort);
    },
  };
}

/** Renew the turn's lease on the one scheduler, a third of the lease apart, until stopped. */
function leaseHeartbeat(agent: TurnDeps, begun: Begun, controller: AbortController): { stop(): void } {
  const { store, deps } = agent;
  const { turnId, epoch, leaseMs, leaseNow } = begun;
  let ended = false;
  const heartbeat = agent.scheduler.every(
    `lease ${turnId}`,
    Math.max(1000, Math.floor(leaseMs / 3)),
    async () => {
      if (ended) return false;
      try {
        await store.updateTurn({
          id: turnId,
          heartbeat_at: deps.clock.now(),
          lease_expires_at: leaseNow() + leaseMs,
          lease_epoch: epoch,
        });
      } catch (error) {
        // Another process took the turn over: this one stops at once (no further tool runs).
        if (!isLeaseLost(error)) throw error;
        controller.abort(lostLease(error));
        return false;
      }
      return true;
    },
  );
  return {
    stop: () => {
      ended = true;
      heartbeat.cancel();
    },
  };
}

function safe(listener: ((event: AgentEvent) => void) | undefined): (event: AgentEvent) => void {
  if (!listener) return () => {};
  return (event) => {
    try {
      listener(event);
    } catch {
      // A broken listener never breaks a turn.
    }
  };
}
