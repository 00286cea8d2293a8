// The gateway and scheduler layers as `tenax status` sees them from outside: the pid file says
// which process should serve and where, /health/live says whether it does, and the gateway's own
// /health gives the scheduler's lag (the scheduler runs inside the gateway).
import { currentGatewayKey } from "../config/gateway-key.js";
import type { TenaxConfig } from "../config/schema.js";
import { errorMessage } from "../core/errors.js";
import { type ProviderRecord, parseProviderRecord } from "../llm/provider-state.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { readDashboardPid } from "../profile/dashboard-pid.js";
import { readGatewayLaunch, readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { dashboardAddress, gatewayAddress, reachUrl } from "../profile/serving.js";
import { describeExit, readUpState, type UpState } from "../profile/up-state.js";
import type { CronComponent } from "./cron-component.js";
import { gatewayAdvice } from "./gateway-advice.js";
import type { PlatformsComponent } from "./platforms-component.js";
import type { Component } from "./status.js";

export interface GatewayComponent extends Component {
  url: string;
  pid: number | null;
  /** What the profile's live `tenax up` says of its gateway, when one runs. */
  supervisor?: Supervisor;
  /** Where the profile's dashboard serves, when one runs (its pid file, or the tenax up running it). */
  dashboard_url?: string;
}

export type Supervisor = Pick<
  UpState["gateway"],
  "state" | "restarts" | "last_exit" | "next_restart_at" | "gave_up"
> & {
  up_pid: number;
};

function supervisorOf(up: UpState): Supervisor {
  const { state, restarts, last_exit, next_restart_at, gave_up } = up.gateway;
  return { up_pid: up.pid, state, restarts, last_exit, next_restart_at, gave_up };
}

/** "run by tenax up (pid U), restarted 2 times (last: it was killed by SIGKILL)". */
function underUp(up: UpState): string {
  const { restarts, last_exit } = up.gateway;
  const history =
    restarts === 0
      ? ""
      : `, restarted ${restarts} time(s)${last_exit === null ? "" : ` (the last one ${describeExit(last_exit)})`}`;
  return `run by tenax up (pid ${up.pid})${history}`;
}

export interface OutsideView {
  gateway: GatewayComponent;
  scheduler: Component & { lag_ms: number | null; max_lag_ms: number | null };
  /** The gateway's live view of each provider (fresher than the store by up to a few seconds). */
  providers?: Map<string, ProviderRecord>;
  /** The gateway's cron component (with its scheduler's numbers), when its /health has one. */
  cron?: CronComponent;
  /** The gateway's platforms component (it holds the connections), when its /health has one. */
  platforms?: PlatformsComponent;
}

/**
 * Where the gateway serves: the address a live gateway wrote in its pid file (it records the port
 * it bound, which matters with --port 0), else, while a live `tenax up` runs it, the address up
 * keeps for it (the --gateway-port it was given, before the gateway binds and while it restarts),
 * else config's.
 */
export function gatewayTarget(
  paths: ProfilePaths,
  config: TenaxConfig,
): { url: string; source: "pid_file" | "up" | "config" } {
  const serving = gatewayAddress(paths);
  if (serving !== null)
    return { url: reachUrl(serving.host ?? config.gateway.host, serving.port), source: serving.source };
  return { url: reachUrl(config.gateway.host, config.gateway.port), source: "config" };
}

export async function probeGatewayFromOutside(
  paths: ProfilePaths,
  config: TenaxConfig,
  timeoutMs = 1500,
): Promise<OutsideView> {
  const { url } = gatewayTarget(paths, config);
  const holder = readGatewayPid(paths.pid);
  const up = readUpState(paths);
  const dashboard = dashboardAddress(paths);
  const dashboardUrl =
    dashboard === null
      ? {}
      : { dashboard_url: reachUrl(dashboard.host ?? config.dashboard.host, dashboard.port) };
  const dashboardNote = dashboard === null ? "" : `; the dashboard serves on ${dashboardUrl.dashboard_url}`;
  const start = tenaxCommand(paths.name, ["up"]);
  const key = currentGatewayKey(paths, config);
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  let live: string | null = null;
  try {
    const response = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(timeoutMs) });
    if (response.status !== 200) live = `${url}/health/live answered ${response.status}`;
    await response.body?.cancel();
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code;
    live = `${url} does not answer (${code ?? errorMessage(error)})`;
  }
  // This profile's gateway crashed (its pid file names a process that is gone), and something else
  // answers where it served: another profile's gateway or another program took the port. It is not
  // this profile's gateway, so it is neither "serving" nor asked for this profile's health.
  if (live === null && holder.pid !== null && !holder.running)
    live = `${url} answers, but not as this profile's gateway (another program or profile holds the port)`;
  if (live !== null) {
    const advice = gatewayAdvice({
      paths,
      now: Date.now(),
      up,
      holder,
      launch: readGatewayLaunch(paths.pid),
      dashboardRunning: up === null && readDashboardPid(paths).running,
    });
    const gateway: GatewayComponent = {
      status: "down",
      url,
      pid: holder.pid,
      detail: `${advice.situation === "not running" ? `not running: ${live}` : `${advice.situation}; ${live}`}${dashboardNote}`,
      next: advice.next,
      ...(up === null ? {} : { supervisor: supervisorOf(up) }),
      ...dashboardUrl,
    };
    return {
      gateway,
      scheduler: {
        status: "down",
        detail: "runs inside the gateway, which is not running: no lease renewals, watchdog or health checks",
        next: null,
        lag_ms: null,
        max_lag_ms: null,
      },
    };
  }
  if (holder.pid === null)
    return {
      gateway: {
        status: "down",
        url,
        pid: null,
        detail: `something answers on ${url}, but this profile has no gateway pid file: another profile's gateway or another program holds the port`,
        next: `${tenaxCommand(paths.name, ["doctor"])} names what holds the port; then ${start}, or set gateway.port`,
      },
      scheduler: {
        status: "down",
        detail: "runs inside this profile's gateway, which is not running",
        next: null,
        lag_ms: null,
        max_lag_ms: null,
      },
    };
  const serving = `serving on ${url} (pid ${holder.pid})${up === null ? "" : `, ${underUp(up)}`}`;
  const gateway: GatewayComponent = {
    status: "ok",
    detail: `${serving}${dashboardNote}`,
    next: null,
    url,
    pid: holder.pid,
    ...(up === null ? {} : { supervisor: supervisorOf(up) }),
    ...dashboardUrl,
  };
  try {
    const response = await fetch(`${url}/health`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const body = (await response.json()) as {
      components?: Record<
        string,
        { status?: string; detail?: string; lag_ms?: number; max_lag_ms?: number; providers?: unknown }
      >;
    };
    const s = body.components?.scheduler;
    if (!s || (s.status !== "ok" && s.status !== "degraded" && s.status !== "down"))
      throw new Error(`its /health answered ${response.status} without a scheduler component`);
    return {
      gateway,
      scheduler: {
        status: s.status,
        detail: s.detail ?? "",
        next: s.status === "ok" ? null : `curl -s ${url}/health shows every layer as the gateway sees it`,
        lag_ms: s.lag_ms ?? null,
        max_lag_ms: s.max_lag_ms ?? null,
      },
      providers: liveProviders(body.components?.providers?.providers),
      ...cronOf(body.components?.cron),
      ...platformsOf(body.components?.platforms),
    };
  } catch (error) {
    return {
      gateway: {
        ...gateway,
        status: "degraded",
        detail: `${serving}, but its /health does not answer properly (${errorMessage(error)})${dashboardNote}`,
        next: `curl -s ${url}/health; the log is ${paths.logs}/gateway.log`,
      },
      scheduler: {
        status: "degraded",
        detail: "unknown: the gateway's /health did not say",
        next: null,
        lag_ms: null,
        max_lag_ms: null,
      },
    };
  }
}

/** The cron component as the gateway's /health gives it, when it is shaped like one. */
function cronOf(raw: unknown): { cron?: CronComponent } {
  const c = raw as Partial<CronComponent> | null | undefined;
  if (
    typeof c !== "object" ||
    c === null ||
    (c.status !== "ok" && c.status !== "degraded" && c.status !== "down") ||
    typeof c.detail !== "string" ||
    typeof c.jobs !== "number"
  )
    return {};
  // The gateway's fields as sent; its age fields are /health's, not status's.
  const {
    checked_at: _c,
    age_ms: _a,
    ...rest
  } = c as CronComponent & { checked_at?: unknown; age_ms?: unknown };
  return { cron: { ...rest, next: rest.next ?? null } };
}

/** The platforms component as the gateway's /health gives it, when it is shaped like one. */
function platformsOf(raw: unknown): { platforms?: PlatformsComponent } {
  const c = raw as Partial<PlatformsComponent> | null | undefined;
  if (
    typeof c !== "object" ||
    c === null ||
    (c.status !== "ok" && c.status !== "degraded" && c.status !== "down") ||
    typeof c.detail !== "string" ||
    !Array.isArray(c.platforms)
  )
    return {};
  const {
    checked_at: _c,
    age_ms: _a,
    ...rest
  } = c as PlatformsComponent & { checked_at?: unknown; age_ms?: unknown };
  return { platforms: { ...rest, next: rest.next ?? null } };
}

/** Each provider's record as the gateway's /health lists it; anything not shaped like one is left out. */
function liveProviders(list: unknown): Map<string, ProviderRecord> {
  const out = new Map<string, ProviderRecord>();
  if (!Array.isArray(list)) return out;
  for (const entry of list as unknown[]) {
    const name = (entry as { provider?: unknown } | null)?.provider;
    const record = parseProviderRecord(entry);
    if (typeof name === "string" && record !== null) out.set(name, record);
  }
  return out;
}
