// The gateway process as a health component, as it sees itself: serving (its address, pid, uptime
// and turns), stopping, or short of file descriptors: a call or probe that could not even open a
// connection to a provider (EMFILE) is this process's fault, named here with the fix, never the
// provider's.
import type { LocalExhaustion } from "../llm/provider-health.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

/** What the monitor needs to know of the gateway it runs in. */
export interface GatewayView {
  stopping: boolean;
  turnsInFlight: number;
  maxTurns: number;
  startedAt: number;
  address: string | null;
}

/** How long the gateway stays degraded after it last ran out of file descriptors reaching a provider. */
export const LOCAL_EXHAUSTION_MS = 5 * 60_000;

export function gatewayComponent(
  g: GatewayView,
  local: LocalExhaustion | null,
  now: number,
  pid: number = process.pid,
): Component & Record<string, unknown> {
  const base = { turns_in_flight: g.turnsInFlight, max_turns: g.maxTurns };
  const serving = `serving${g.address ? ` on ${g.address}` : ""} (pid ${pid})`;
  if (g.stopping)
    return {
      ...base,
      status: "degraded",
      detail: `stopping: takes no new turns, ${g.turnsInFlight} still running`,
      next: "wait for the restarted gateway; `tenax gateway status` shows the service",
    };
  if (local !== null && now - local.at < LOCAL_EXHAUSTION_MS)
    return {
      ...base,
      status: "degraded",
      detail: `${formatDuration(now - local.at)} ago this process could not open a connection to ${local.provider} (${local.source === "call" ? "a call" : "the probe"}): ${local.message}`,
      next: `raise the gateway's open-file limit (ulimit -n before tenax gateway run, LimitNOFILE= in the service unit) and see what holds its connections open: ls /proc/${pid}/fd | wc -l`,
      local_exhaustion: local,
    };
  return {
    ...base,
    status: "ok",
    detail: `${serving} for ${formatDuration(now - g.startedAt)}; ${g.turnsInFlight} of at most ${g.maxTurns} turns running`,
    next: null,
  };
}
