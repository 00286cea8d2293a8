// Whether the gateway's stop is a restart: `tenax gateway restart` writes the marker before it
// asks systemd, and the stopping gateway reads and removes it, so the chats with a turn running
// are told "restarting, send /retry if no answer comes" instead of "shutting down". A marker older
// than a few minutes is a restart that never came, and is not believed.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ProfilePaths } from "./paths.js";

const FRESH_MS = 5 * 60_000;

export function markRestartRequested(paths: Pick<ProfilePaths, "restartRequested">, now = Date.now()): void {
  writeFileSync(paths.restartRequested, `${new Date(now).toISOString()}\n`, { mode: 0o600 });
}

/** True when a restart was asked for in the last few minutes; the marker is removed either way. */
export function takeRestartRequested(
  paths: Pick<ProfilePaths, "restartRequested">,
  now = Date.now(),
): boolean {
  let text: string;
  try {
    text = readFileSync(paths.restartRequested, "utf8");
  } catch {
    return false;
  }
  rmSync(paths.restartRequested, { force: true });
  const at = Date.parse(text.trim());
  return Number.isFinite(at) && now - at >= 0 && now - at < FRESH_MS;
}
