// The dashboard's view of the gateway: every second or so it asks GET /health and
// GET /api/capabilities with a short timeout, and keeps what it learned, including since when the
// gateway has been unreachable. It assumes nothing: a route that answers 404 is "not served".
import { currentGatewayKey } from "../config/gateway-key.js";
import type { TenaxConfig } from "../config/schema.js";
import { type Clock, systemClock } from "../core/deps.js";
import { gatewayTarget } from "../health/gateway-status.js";
import type { ProfilePaths } from "../profile/paths.js";

export type HealthLevel = "ok" | "degraded" | "down";

export interface HealthComponent {
  status: string;
  detail: string;
  /** What to do, when the gateway says. */
  next?: string;
}

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
    | { served: true; http_status: number; status: HealthLevel; components: Record<string, HealthComponent> }
    | { served: false; http_status: number }
    | null;
  capabilities:
    | { served: true; version: string; list: string[] }
    | { served: false; http_status: number }
    | null;
  checked_at: number | null;
}

export interface ProbeDeps {
  fetch: typeof fetch;
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
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private readonly deps: ProbeDeps;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: GatewayProbeOptions) {
    this.deps = { fetch: globalThis.fetch, clock: systemClock, ...options.deps };
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
    // A restarted gateway may listen on another port: the pid file says where, each time.
    const target = gatewayTarget(this.options.paths, this.config());
    const now = () => this.deps.clock.now();
    const answered = await this.get(`${target.url}/health`);
    // No live pid file or up state says this profile's gateway serves there: whatever answers on
    // the configured port is another profile's gateway or another program, never a green tile.
    const health: Answer =
      answered.kind === "answer" && target.source === "config"
        ? {
            kind: "unreachable",
            error: `${target.url} answers, but this profile's gateway is not running there (no live pid file): another profile's gateway or another program holds the port`,
          }
        : answered;
    if (health.kind === "unreachable") {
      this.view = {
        ...target,
        reachable: false,
        unreachable_since: this.view.reachable === false ? (this.view.unreachable_since ?? now()) : now(),
        error: health.error,
        health: null,
        capabilities: null,
        checked_at: now(),
      };
      return this.view;
    }
    const capabilities = await this.get(`${target.url}/api/capabilities`);
    this.view = {
      ...target,
      reachable: true,
      unreachable_since: null,
      error: refusal(health) ?? (capabilities.kind === "answer" ? refusal(capabilities) : null),
      health: readHealth(health),
      capabilities: readCapabilities(capabilities),
      checked_at: now(),
    };
    return this.view;
  }

  private async get(url: string): Promise<Answer> {
    try {
      const res = await this.deps.fetch(url, {
        headers: this.authHeaders(),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.text();
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON: readHealth and readCapabilities say the answer was not understood.
      }
      return { kind: "answer", status: res.status, body };
    } catch (error) {
      return { kind: "unreachable", error: describeFailure(error, url, this.timeoutMs) };
    }
  }
}

type Answer = { kind: "answer"; status: number; body: unknown } | { kind: "unreachable"; error: string };

function refusal(answer: Answer): string | null {
  if (answer.kind !== "answer" || answer.status !== 401) return null;
  return "the gateway refused the dashboard's API key (401): the dashboard sends gateway.api_key, else TENAX_API_KEY from its environment or the profile's .env; make it the key the gateway was started with";
}

function readHealth(answer: Answer): GatewayView["health"] {
  if (answer.kind !== "answer") return null;
  const body = answer.body as { status?: unknown; components?: unknown } | null;
  const status = body?.status;
  if ((answer.status === 200 || answer.status === 503) && isLevel(status)) {
    const components: Record<string, HealthComponent> = {};
    if (typeof body?.components === "object" && body.components !== null) {
      for (const [name, raw] of Object.entries(body.components as Record<string, unknown>)) {
        const c = (raw ?? {}) as { status?: unknown; detail?: unknown; next?: unknown };
        components[name] = {
          status: String(c.status ?? "?"),
          detail: String(c.detail ?? ""),
          ...(typeof c.next === "string" && c.next !== "" ? { next: c.next } : {}),
        };
      }
    }
    return { served: true, http_status: answer.status, status, components };
  }
  return { served: false, http_status: answer.status };
}

function readCapabilities(answer: Answer): GatewayView["capabilities"] {
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

function isLevel(value: unknown): value is HealthLevel {
  return value === "ok" || value === "degraded" || value === "down";
}

function describeFailure(error: unknown, url: string, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError"))
    return `no answer from ${url} within ${timeoutMs} ms`;
  const cause = error instanceof Error ? (error.cause as NodeJS.ErrnoException | undefined) : undefined;
  if (cause?.code === "ECONNREFUSED") return `connection refused at ${url} (nothing listens there)`;
  const detail = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return `cannot reach ${url}: ${detail}`;
}
