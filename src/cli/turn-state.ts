// What became of a session's last turn, in one short cell of `tenax sessions list` (the state
// itself is the store's, store/last-turn.ts, shared with the dashboard and the gateway).
import type { LastTurn } from "../store/last-turn.js";

/** One short cell: "completed", "resumed (completed after 1 interruption)", "suspended after 3 interruptions". */
export function describeLastTurn(turn: LastTurn | null): string {
  if (turn === null) return "";
  const n = turn.interrupt_count;
  const times = `${n} interruption${n === 1 ? "" : "s"}`;
  if (turn.state === "resumed") return `resumed (${turn.status} after ${times})`;
  if (turn.state === "suspended") return `suspended after ${times}`;
  return turn.state;
}
