// Ending a session's running turn from outside the process that runs it (`tenax sessions stop`, the
// dashboard): a stop request is written to the store, where that process's progress tracker finds
// it within a second (src/agent/turn-progress.ts) and interrupts the turn like any stop: the
// provider request aborted, the tool processes killed. A turn whose process is gone is marked
// interrupted here at once, as a restart would. Then it waits until the store says the turn ended.

import type { Sleep } from "../core/deps.js";
import { TenaxError } from "../core/errors.js";
import { leaseNow, type Owners, ownerIsGone } from "../core/owners.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { StorePort } from "../store/port.js";
import type { TurnView } from "../store/rows.js";
import { reapDeadTurns } from "./reap.js";
import { STOP_KIND, type StopRecord } from "./turn-progress.js";

export interface StopOutcome {
  session_id: string;
  turn_id: string;
  /** Who ran it ("pid:N", or "inst:ID" on a shared store), or null when none is recorded. */
  owner: string | null;
  /**
   * stopped: its process ended it; reaped: its process was gone and the turn is marked interrupted
   * here; pending: its process has not ended it within the wait (it may still: the request stays).
   */
  outcome: "stopped" | "reaped" | "pending";
  /** The turn's status as the store has it after the wait. */
  status: string;
}

export interface StopOptions {
  /** Who asks, for the turn's record and the log: "tenax sessions stop (pid 123)". */
  by: string;
  now: () => number;
  sleep: Sleep;
  /** How long to wait for the process running it to end it. */
  waitMs?: number;
  /** Who holds leases: a turn whose owner is known to have ended is reaped here at once. */
  owners: Owners;
  /** The profile, for the commands hints print. */
  profile: string;
}

export async function stopSessionTurn(
  store: StorePort,
  idOrPrefix: string,
  options: StopOptions,
): Promise<StopOutcome> {
  const sessionId = await store.resolveSessionId(idOrPrefix);
  const turn = (await store.runningTurns()).find((t) => t.session_id === sessionId);
  if (turn === undefined)
    throw new TenaxError(
      "no_running_turn",
      `session ${sessionId} has no running turn: there is nothing to stop`,
      {
        hint: `its turns: ${tenaxCommand(options.profile, ["sessions", "show", sessionId])}`,
      },
    );
  const base = { session_id: sessionId, turn_id: turn.id, owner: turn.lease_owner };
  if (ownerIsGone(options.owners, turn.lease_owner)) {
    await reapDeadTurns(store, leaseNow(options.owners, options.now()), {
      only: new Set([turn.id]),
      owners: options.owners,
    });
    return { ...base, outcome: "reaped", status: await statusOf(store, turn) };
  }
  const request: StopRecord = {
    session_id: sessionId,
    turn_id: turn.id,
    requested_at: options.now(),
    by: options.by,
  };
  await store.putRecord(STOP_KIND, turn.id, request, { sessionId });
  const until = options.now() + (options.waitMs ?? 15_000);
  for (;;) {
    const status = await statusOf(store, turn);
    if (status !== "running") return { ...base, outcome: "stopped", status };
    if (options.now() >= until) return { ...base, outcome: "pending", status };
    await options.sleep(200);
  }
}

async function statusOf(store: StorePort, turn: TurnView): Promise<string> {
  return (await store.getTurns(turn.session_id)).find((t) => t.id === turn.id)?.status ?? "unknown";
}
