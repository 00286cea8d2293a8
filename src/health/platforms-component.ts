// The chat platforms as one health component (`platforms`): per configured platform, whether the
// gateway is connected to it, its last update, and what waits in its outbox. Degraded when a
// platform is not connected, a message was given up, or one has waited more than five minutes;
// down when no gateway runs to connect at all. The store's backlog counts every process's
// messages; the connection is known only inside the gateway (its /health says it).
import type { TenaxConfig } from "../config/schema.js";
import type { OutboxBacklog } from "../outbox/backlog.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

/** A message waiting longer than this is a backlog. */
export const PLATFORM_BACKLOG_MS = 5 * 60_000;

/** What the gateway knows of a platform's connection (the adapter's status). */
export interface PlatformLive {
  mode: string;
  connected: boolean;
  last_ok_at: number | null;
  last_update_at: number | null;
  last_error: string | null;
  last_error_at: number | null;
}

export interface PlatformRow {
  platform: string;
  mode: string | null;
  /** null: not known here (no gateway in this process). */
  connected: boolean | null;
  last_update_at: number | null;
  /** The connection's last error (polling, a send), as the gateway saw it. */
  last_error: string | null;
  /** The newest error of a message not delivered, from the outbox. */
  outbox_error: string | null;
  pending: number;
  given_up: number;
  oldest_pending_age_ms: number | null;
}

/**
 * With several gateways of one profile on a shared store, one holds the chat platforms (the store's
 * `platforms` lock): it alone receives and sends; the others serve the rest and stand by.
 */
export interface PlatformsHolding {
  /** This gateway runs the chat platforms. */
  holder: boolean;
  /** The owner tag of the gateway holding them ("inst:ID"; "pid:N" on one host), or null when unknown. */
  held_by: string | null;
  /** This gateway's owner tag. */
  self: string;
  /** Why this gateway does not hold them (who does, the database's error), or null. */
  detail: string | null;
}

export interface PlatformsComponent extends Component {
  platforms: PlatformRow[];
  /** Whether this gateway holds the platforms, and who does; null outside a gateway. */
  holding: PlatformsHolding | null;
}

/** The platforms config.yaml names, in a stable order. */
export function configuredPlatforms(config: Pick<TenaxConfig, "platforms">): string[] {
  return (Object.keys(config.platforms) as (keyof TenaxConfig["platforms"])[])
    .filter((name) => config.platforms[name] !== undefined)
    .sort();
}

export function platformsComponent(
  paths: ProfilePaths,
  config: Pick<TenaxConfig, "platforms">,
  backlog: Record<string, OutboxBacklog>,
  /** The gateway's live view; null when no gateway runs in this process (and none answered). */
  gatewayLive: Record<string, PlatformLive> | null,
  now: number,
  gatewayDown = false,
  /** The gateway's hold on the platforms; null outside a gateway. A standby knows no connection. */
  holding: PlatformsHolding | null = null,
): PlatformsComponent {
  const names = configuredPlatforms(config);
  if (names.length === 0)
    return { status: "ok", detail: "no chat platforms configured", next: null, platforms: [], holding };
  const live = holding?.holder === false ? null : gatewayLive;
  const log = `${paths.logs}/gateway.log`;
  const rows: PlatformRow[] = names.map((name) => {
    const b = backlog[name];
    const l = live?.[name];
    return {
      platform: name,
      mode: l?.mode ?? null,
      connected: l ? l.connected : null,
      last_update_at: l?.last_update_at ?? null,
      last_error: l?.last_error ?? null,
      outbox_error: b?.last_error ?? null,
      pending: b?.pending ?? 0,
      given_up: b?.given_up ?? 0,
      oldest_pending_age_ms: b?.oldest_pending_age_ms ?? null,
    };
  });
  const problems: { detail: string; next: string }[] = [];
  for (const r of rows) {
    if (gatewayDown)
      problems.push({
        detail: `${r.platform}: not connected, as no gateway runs${r.pending > 0 ? `; ${r.pending} message(s) wait to be sent` : ""}`,
        next: `${tenaxCommand(paths.name, ["up"])} starts the gateway, which connects and sends what waits`,
      });
    else if (r.connected === false)
      problems.push({
        detail: `${r.platform}: not connected${r.last_error ? `: ${r.last_error}` : ""}`,
        next: `the gateway retries by itself; if it goes on, check platforms.${r.platform} in config.yaml (the token, api_root) and that this machine reaches it; each failure is in ${log}`,
      });
    if (r.given_up > 0)
      problems.push({
        detail: `${r.platform}: ${r.given_up} message(s) given up${r.outbox_error ? ` (last error: ${r.outbox_error})` : ""}`,
        next: `each one is in ${log}; they are kept 24 hours in ${tenaxCommand(paths.name, ["status", "--json"])}`,
      });
    if (!gatewayDown && r.oldest_pending_age_ms !== null && r.oldest_pending_age_ms > PLATFORM_BACKLOG_MS)
      problems.push({
        detail: `${r.platform}: ${r.pending} message(s) waiting, the oldest for ${formatDuration(r.oldest_pending_age_ms)}`,
        next: `the gateway retries with backoff; ${log} says why each attempt failed`,
      });
  }
  if (problems.length > 0)
    return {
      status: gatewayDown ? "down" : "degraded",
      detail: problems.map((p) => p.detail).join("; "),
      next: problems[0]?.next ?? null,
      platforms: rows,
      holding,
    };
  const detail = rows
    .map((r) => {
      const since =
        r.last_update_at === null
          ? "no update yet"
          : `last update ${formatDuration(now - r.last_update_at)} ago`;
      const how = r.connected === null ? "" : `connected${r.mode ? ` (${r.mode})` : ""}, `;
      return `${r.platform}: ${how}${since}, ${r.pending === 0 ? "nothing waiting" : `${r.pending} waiting`}`;
    })
    .join("; ");
  const standby =
    holding?.holder === false
      ? `held by ${holding.held_by ?? "another gateway"}, not this one (${holding.self}); `
      : "";
  return { status: "ok", detail: `${standby}${detail}`, next: null, platforms: rows, holding };
}
