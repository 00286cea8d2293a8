// What `tenax sessions stop` says of what became of the turn it asked to end.
import type { StopOutcome } from "../../agent/turn-stop.js";

export function describeStop(s: StopOutcome): string {
  const which = `turn ${s.turn_id} of session ${s.session_id}`;
  const by = s.owner === null ? "its process" : `its process (${s.owner})`;
  switch (s.outcome) {
    case "stopped":
      return `stopped ${which}: ${by} ended it; it is ${s.status} (nothing of it runs any more)`;
    case "reaped":
      return `${which} was left running by a process that is gone (${s.owner ?? "unknown"}): it is marked ${s.status}`;
    case "pending": {
      const pid = /^pid:(\d+)$/.exec(s.owner ?? "")?.[1];
      return `asked ${by} to stop ${which}, but it has not ended it yet (the request stands: it is ended when that process next looks). If the process is hung, end it: ${pid === undefined ? "find it with ps" : `kill ${pid}`}`;
    }
    default: {
      const never: never = s.outcome;
      return String(never);
    }
  }
}
