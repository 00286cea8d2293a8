// The gateway as `tenax status` and the dashboard see it from outside, in one look: the pid file
// says which process should serve and where, the gateway's own /health whether it does and what
// it sees of every layer (the scheduler's lag among them: the scheduler runs inside the gateway).
import { currentGatewayKey } from "../config/gateway-key.js";
import type { TenaxConfig } from "../config/schema.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { readDashboardPid } from "../profile/dashboard-pid.js";
import { readGatewayLaunch, readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { dashboardAddress, gatewayAddress, reachUrl } from "../profile/serving.js";
import { describeExit, readUpState, type UpState } from "../profile/up-state.js";
import { gatewayAdvice } from "./gateway-advice.js";
import { httpLook, type Look, type LookFn } from "./http-look.js";
import type { Component, ComponentLevel, Level } from "./status.js";

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

/** The scheduler runs inside the gateway: only its /health can say how late it wakes. */
export type SchedulerComponent = Component & { lag_ms: number | null; max_lag_ms: number | null };

/** A component as the gateway's /health gives it: the one model's shape, with its own figures. */
export type ReportedComponent = Component & Record<string, unknown>;

/**
 * This profile's gateway as seen from outside (tenax status, the dashboard): what answers where it
 * serves, its own component and its scheduler's, and its /health when it answered with one, whose
 * components then speak for every layer they name.
 */
export interface OutsideView {
  url: string;
  source: "pid_file" | "up" | "config";
  /** What went wrong in the look (no answer, another's gateway, no health report); null when it served one. */
  problem: string | null;
  /** The HTTP status this profile's gateway answered /health with; null when it did not answer. */
  answered: number | null;
  gateway: GatewayComponent;
  scheduler: SchedulerComponent;
  health: { http_status: number; status: Level; components: Record<string, ReportedComponent> } | null;
  checked_at: number;
}

export interface LookAtGatewayOptions {
  look?: LookFn;
  /** How long the look may take in all (default 1.5 s). */
  timeoutMs?: number;
  now?: () => number;
  /**
   * Whether a dashboard of this profile runs outside any tenax up (then the advice is
   * `tenax gateway run`, as `tenax up` would find its port taken); read from dashboard.pid when left out.
   */
  dashboardRunning?: boolean;
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

/**
 * One look at this profile's gateway: GET /health where it serves. Only a live pid file makes what
 * answers this profile's gateway; nothing answering is down (with the advice for the way it was
 * started), and a gateway whose /health says nothing usable is degraded. Never throws, and always
 * ends within the timeout (httpLook).
 */
export async function lookAtGateway(
  paths: ProfilePaths,
  config: TenaxConfig,
  options: LookAtGatewayOptions = {},
): Promise<OutsideView> {
  const look = options.look ?? httpLook;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 1500;
  const { url, source } = gatewayTarget(paths, config);
  const holder = readGatewayPid(paths.pid);
  const up = readUpState(paths);
  const dashboard = dashboardAddress(paths);
  const dashboardUrl =
    dashboard === null
      ? {}
      : { dashboard_url: reachUrl(dashboard.host ?? config.dashboard.host, dashboard.port) };
  const dashboardNote = dashboard === null ? "" : `; the dashboard serves on ${dashboardUrl.dashboard_url}`;
  const key = currentGatewayKey(paths, config);
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  const answer = await look(`${url}/health`, { headers, timeoutMs });
  const seen = { url, source, checked_at: now() };
  const supervisor = { ...(up === null ? {} : { supervisor: supervisorOf(up) }), ...dashboardUrl };
  if (answer.kind === "no_answer") {
    const advice = gatewayAdvice({
      paths,
      now: now(),
      up,
      holder,
      launch: readGatewayLaunch(paths.pid),
      dashboardRunning: options.dashboardRunning ?? (up === null && readDashboardPid(paths).running),
    });
    const problem = `${url} does not answer (${answer.message})`;
    return {
      ...seen,
      problem,
      answered: null,
      gateway: {
        status: "down",
        url,
        pid: holder.pid,
        detail: `${advice.situation === "not running" ? `not running: ${problem}` : `${advice.situation}; ${problem}`}${dashboardNote}`,
        next: advice.next,
        ...supervisor,
      },
      scheduler: schedulerUnseen("down", NOT_RUNNING),
      health: null,
    };
  }
  // Something answers, but no live pid file says this profile's gateway serves there: another
  // profile's gateway or another program holds the port. Its health is not this profile's.
  if (!holder.running) {
    const start = tenaxCommand(paths.name, ["up"]);
    const problem =
      holder.pid !== null
        ? `${url} answers, but not as this profile's gateway (another program or profile holds the port)`
        : `something answers on ${url}, but this profile has no gateway pid file: another profile's gateway or another program holds the port`;
    return {
      ...seen,
      problem,
      answered: null,
      gateway: {
        status: "down",
        url,
        pid: holder.pid,
        detail: `${
          holder.pid !== null
            ? `not running: gateway pid ${holder.pid} is gone without a clean stop (a crash); ${problem}`
            : problem
        }${dashboardNote}`,
        next: `${tenaxCommand(paths.name, ["doctor"])} names what holds the port; then ${start}, or set gateway.port`,
        ...supervisor,
      },
      scheduler: schedulerUnseen("down", NOT_RUNNING),
      health: null,
    };
  }
  const serving = `serving on ${url} (pid ${holder.pid})`;
  const health = readReport(answer);
  if (health === null) {
    const why =
      answer.status === 401
        ? `its /health refused this profile's key (401): the gateway runs with another gateway.api_key or TENAX_API_KEY than ${paths.env} holds`
        : `its /health answered ${answer.status} without a health report`;
    return {
      ...seen,
      problem: why,
      answered: answer.status,
      gateway: {
        status: "degraded",
        url,
        pid: holder.pid,
        detail: `${serving}, but ${why}${dashboardNote}`,
        next: `curl -s ${url}/health; the log is ${paths.logs}/gateway.log`,
        ...supervisor,
      },
      scheduler: schedulerUnseen("degraded", "unknown: the gateway's /health did not say"),
      health: null,
    };
  }
  // The gateway's own component says how it is (stopping is degraded); from outside, which process
  // it is and who runs it come first.
  const own = health.components.gateway;
  const runBy = up === null ? "" : `, ${underUp(up)}`;
  const turns =
    typeof own?.turns_in_flight === "number" && typeof own.max_turns === "number"
      ? `; ${own.turns_in_flight} of at most ${own.max_turns} turns running`
      : "";
  const said = own === undefined ? "" : own.status === "ok" ? turns : `; ${own.detail}`;
  const scheduler = health.components.scheduler;
  return {
    ...seen,
    problem: null,
    answered: answer.status,
    gateway: {
      ...(own ?? {}),
      status: own?.status === "down" || own?.status === "degraded" ? own.status : "ok",
      detail: `${serving}${runBy}${said}${dashboardNote}`,
      next: own?.next ?? null,
      url,
      pid: holder.pid,
      ...supervisor,
    },
    scheduler:
      scheduler === undefined
        ? schedulerUnseen("degraded", "unknown: the gateway's /health did not say")
        : {
            ...scheduler,
            lag_ms: numberOrNull(scheduler.lag_ms),
            max_lag_ms: numberOrNull(scheduler.max_lag_ms),
          },
    health,
  };
}

const NOT_RUNNING =
  "runs inside the gateway, which is not running: no lease renewals, watchdog or health checks";

function schedulerUnseen(status: Level, detail: string): SchedulerComponent {
  return { status, detail, next: null, lag_ms: null, max_lag_ms: null };
}

function numberOrNull(value: unknown): number | null {
  return typeof value === "number" ? value : null;
}

/** The gateway's /health report (200, or 503 when down), each component shaped as the model's. */
function readReport(answer: Extract<Look, { kind: "answer" }>): OutsideView["health"] {
  const body = answer.body as { status?: unknown; components?: unknown } | null;
  if (answer.status !== 200 && answer.status !== 503) return null;
  if (typeof body !== "object" || body === null || !isLevel(body.status)) return null;
  const components: Record<string, ReportedComponent> = {};
  if (typeof body.components === "object" && body.components !== null)
    for (const [name, raw] of Object.entries(body.components as Record<string, unknown>)) {
      const component = reportedComponent(raw);
      if (component !== null) components[name] = component;
    }
  return { http_status: answer.status, status: body.status, components };
}

/** A component shaped as the model's ({status, detail, next} and its figures); null otherwise. */
export function reportedComponent(raw: unknown): ReportedComponent | null {
  if (typeof raw !== "object" || raw === null) return null;
  const c = raw as Record<string, unknown>;
  if (!isComponentLevel(c.status) || typeof c.detail !== "string") return null;
  return { ...c, status: c.status, detail: c.detail, next: typeof c.next === "string" ? c.next : null };
}

function isLevel(value: unknown): value is Level {
  return value === "ok" || value === "degraded" || value === "down";
}

function isComponentLevel(value: unknown): value is ComponentLevel {
  return isLevel(value) || value === "unknown";
}
