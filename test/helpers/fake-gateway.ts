// A stand-in for the gateway's turns in the runs tests: it launches turns on a real store that
// the test drives by hand (`say` streams text, `end` finishes the turn as the agent would).
import type { AgentEvent, TurnResult, TurnStatus } from "../../src/agent/turn.js";
import { interruptFailure, TurnInterrupt, thrownFailure } from "../../src/agent/turn-failure.js";
import type { LaunchedTurn, LaunchRequest, TurnWatcher } from "../../src/gateway/gateway.js";
import type { Store } from "../../src/store/store.js";

interface FakeTurn {
  turnId: string;
  watcher: TurnWatcher | undefined;
  text: string;
  settle: (r: TurnResult) => void;
}

/** Launches turns the test drives by hand: `say` streams text, `end` finishes the turn as the agent would. */
export class FakeGateway {
  launches = 0;
  readonly turns = new Map<string, FakeTurn>();
  constructor(private readonly store: Store) {}

  async launch(request: LaunchRequest): Promise<LaunchedTurn> {
    this.launches++;
    const sessionId = request.sessionId ?? (await this.store.createSession({ source: "gateway" }));
    const turnId = await this.store.startTurn(sessionId, 60_000);
    let settle!: (r: TurnResult) => void;
    const result = new Promise<TurnResult>((resolve) => {
      settle = resolve;
    });
    this.turns.set(sessionId, { turnId, watcher: request.watcher, text: "", settle });
    request.watcher?.onEvent({ type: "turn_started", session_id: sessionId, turn_id: turnId });
    return { sessionId, controller: new AbortController(), result, started: () => true };
  }

  say(sessionId: string, ...deltas: string[]): void {
    const turn = this.turn(sessionId);
    for (const delta of deltas) {
      turn.text += delta;
      turn.watcher?.onEvent({ type: "text", delta } as AgentEvent);
    }
  }

  async end(sessionId: string, status: TurnStatus = "completed"): Promise<void> {
    const turn = this.turn(sessionId);
    this.turns.delete(sessionId);
    const failure =
      status === "completed"
        ? null
        : status === "interrupted"
          ? interruptFailure(new TurnInterrupt("stopped", "stopped by the test"))
          : thrownFailure(new Error("the fake turn failed"));
    const error = failure?.message ?? null;
    await this.store.updateTurn({ id: turn.turnId, status, ended_at: Date.now(), error });
    const partial = status !== "completed";
    turn.watcher?.onEvent({ type: "turn_finished", turn_id: turn.turnId, status, partial, error, failure });
    turn.settle({
      session_id: sessionId,
      turn_id: turn.turnId,
      status,
      reply: turn.text,
      partial,
      finish_reason: "stop",
      error,
      failure,
      iterations: 1,
      usage: { input_tokens: 1, output_tokens: 1 },
      model: null,
    });
  }

  interrupt(sessionId: string): boolean {
    if (!this.turns.has(sessionId)) return false;
    void this.end(sessionId, "interrupted");
    return true;
  }

  isRunning(sessionId: string): boolean {
    return this.turns.has(sessionId);
  }

  private turn(sessionId: string): FakeTurn {
    const turn = this.turns.get(sessionId);
    if (!turn) throw new Error(`no fake turn runs in ${sessionId}`);
    return turn;
  }
}
