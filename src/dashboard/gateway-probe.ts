// The dashboard's view of the gateway: every second or so it takes the one look `tenax status`
// takes (lookAtGateway: GET /health, with a deadline that always ends it) and asks
// GET /api/capabilities, and keeps what it learned, including since when the gateway has been
// unreachable. It assumes nothing: a route that answers 404 is "not served".
import { currentGatewayKey } from "../config/gateway-key.js";
import type { TenaxConfig } from "../config/schema.js";
import { type Clock, systemClock } from "../core/deps.js";
import {
  gatewayTarget,
  lookAtGateway,
  type OutsideView,
  type ReportedComponent,
} from "../health/gateway-status.js";
import { httpLook, type Look, type LookFn } from "../health/http-look.js";
import type { ProfilePaths } from "../profile/paths.js";

export type HealthLevel = "ok" | "degraded" | "down";

export interface GatewayView {
  /** Where the probe looked, and why there (a running gateway's pid file, tenax up's state, config.yaml). */
  url: string;
  source: "pid_file" | "up" | "config";
  /** null until the first probe has finished. */
  reachable: boolean | null;
  /** When the current unreachable spell began (ms), null while reachable. */
  unreachable_since: number | null;
  /** Why it is unreachable or not understood: the connection error, a timeout, a refused key. */
  error: string | null;
  health:
    | {
        served: true;
        http_status: number;
        status: HealthLevel;
        components: Record<string, ReportedComponent>;
      }
    | { served: false; http_status: number }
    | null;
  capabilities:
    | { served: true; version: string; list: string[] }
    | { served: false; http_status: number }
    | null;
  checked_at: number | null;
}

export interface ProbeDeps {
  look: LookFn;
  clock: Clock;
}

export interface GatewayProbeOptions {
  paths: ProfilePaths;
  /** The profile's config, or how to get it as it is now (config.yaml may be edited while it runs). */
  config: TenaxConfig | (() => TenaxConfig);
  /** How often to look (default 1000 ms) and how long one request may take (default 1500 ms). */
  intervalMs?: number;
  timeoutMs?: number;
  deps?: Partial<ProbeDeps>;
}

export class GatewayProbe {
  private view: GatewayView;
  private seen: OutsideView | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private readonly deps: ProbeDeps;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: GatewayProbeOptions) {
    this.deps = { look: httpLook, clock: systemClock, ...options.deps };
    this.intervalMs = options.intervalMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 1500;
    const target = gatewayTarget(options.paths, this.config());
    this.view = {
      ...target,
      reachable: null,
      unreachable_since: null,
      error: null,
      health: null,
      capabilities: null,
      checked_at: null,
    };
  }

  private config(): TenaxConfig {
    const { config } = this.options;
    return typeof config === "function" ? config() : config;
  }

  /** What the last probe found. */
  get current(): GatewayView {
    return this.view;
  }

  /**
   * The last look as `tenax status` takes it (lookAtGateway, the one look both make): what the
   * dashboard's layers are computed from. Null before the first look has ended.
   */
  get outside(): OutsideView | null {
    return this.seen;
  }

  /**
   * The Authorization header the gateway wants, when it has a key. Looked up each time: a gateway
   * started after the dashboard (as `tenax up` starts them) may have just written its key to .env.
   */
  authHeaders(): Record<string, string> {
    const key = currentGatewayKey(this.options.paths, this.config());
    return key === undefined ? {} : { authorization: `Bearer ${key}` };
  }

  /** Probe now and then every interval, until stop(). */
  start(): void {
    if (this.timer !== null) return;
    const tick = () => {
      this.running ??= this.probe().finally(() => {
        this.running = null;
      });
    };
    tick();
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** A look now (or the one under way), for when something says the last one is out of date. */
  async refresh(): Promise<GatewayView> {
    this.running ??= this.probe().finally(() => {
      this.running = null;
    });
    await this.running;
    return this.view;
  }

  /** One look at the gateway; never throws. */
  async probe(): Promise<GatewayView> {
    const now = () => this.deps.clock.now();
    // A restarted gateway may listen on another port: the pid file says where, each time.
    const seen = await lookAtGateway(this.options.paths, this.config(), {
      look: this.deps.look,
      timeoutMs: this.timeoutMs,
      now,
      // This dashboard runs: outside a tenax up, `tenax up` would find its port taken.
      dashboardRunning: true,
    });
    this.seen = seen;
    const { url, source } = seen;
    if (seen.answered === null) {
      this.view = {
        url,
        source,
        reachable: false,
        unreachable_since: this.view.reachable === false ? (this.view.unreachable_since ?? now()) : now(),
        error: seen.problem,
        health: null,
        capabilities: null,
        checked_at: now(),
      };
      return this.view;
    }
    const capabilities = await this.deps.look(`${url}/api/capabilities`, {
      headers: this.authHeaders(),
      timeoutMs: this.timeoutMs,
    });
    this.view = {
      url,
      source,
      reachable: true,
      unreachable_since: null,
      error: seen.problem ?? refusal(capabilities),
      health: seen.health ? { served: true, ...seen.health } : { served: false, http_status: seen.answered },
      capabilities: readCapabilities(capabilities),
      checked_at: now(),
    };
    return this.view;
  }
}

function refusal(answer: Look): string | null {
  if (answer.kind !== "answer" || answer.status !== 401) return null;
  return "the gateway refused this profile's key (401) on /api/capabilities: the dashboard sends gateway.api_key, else TENAX_API_KEY from its environment or the profile's .env; make it the key the gateway was started with";
}

function readCapabilities(answer: Look): GatewayView["capabilities"] {
  if (answer.kind !== "answer") return null;
  const body = answer.body as { version?: unknown; capabilities?: unknown } | null;
  if (answer.status === 200 && Array.isArray(body?.capabilities))
    return {
      served: true,
      version: String(body.version ?? "?"),
      list: body.capabilities.filter((c): c is string => typeof c === "string"),
    };
  return { served: false, http_status: answer.status };
}
