// The dashboard's HTTP handler, callable in-process: the page and its assets, and the JSON the page
// polls (layers, gateway probe, sessions, search, transcripts, recent events). The port is opened
// by the caller (the `tenax dashboard` command), so this file never listens by itself.
import { existsSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { fileURLToPath } from "node:url";
import type { TenaxConfig } from "../config/schema.js";
import { errorMessage } from "../core/errors.js";
import { loopbackHostHeader } from "../core/host-header.js";
import { decodePathPart, HttpRequestError, sendJson } from "../core/http.js";
import { type GatewayAdvice, gatewayAdvice } from "../health/gateway-advice.js";
import { readGatewayLaunch, readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { readUpState, type UpState } from "../profile/up-state.js";
import { EVENTS_CAPABILITIES, EventFeed } from "./event-feed.js";
import { GatewayProbe, type GatewayProbeOptions, type GatewayView } from "./gateway-probe.js";
import {
  DashboardError,
  type LayersView,
  listSessions,
  readLayers,
  searchSessions,
  transcript,
} from "./store-view.js";

export interface DashboardOptions {
  paths: ProfilePaths;
  config: TenaxConfig;
  version: string;
  probe?: Partial<Pick<GatewayProbeOptions, "intervalMs" | "timeoutMs" | "deps">>;
  /** How long one status report is reused (default 1000 ms): many open pages, one read. */
  layersCacheMs?: number;
  now?: () => number;
}

const ASSETS: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};

/** The page's files: next to this module in src/, or in src/ of the clone when running from dist/. */
function assetsDir(): string {
  const candidates = ["./assets/", "../../src/dashboard/assets/"].map((p) =>
    fileURLToPath(new URL(p, import.meta.url)),
  );
  const found = candidates.find((dir) => existsSync(`${dir}index.html`));
  if (found === undefined)
    throw new Error(`the dashboard page is missing: looked in ${candidates.join(" and ")}`);
  return found;
}

const SECURITY_HEADERS = {
  // Transcripts are untrusted text: no inline script, nothing from elsewhere, no framing.
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export class Dashboard {
  readonly probe: GatewayProbe;
  readonly feed: EventFeed;
  private readonly assets = new Map<string, { body: Buffer; type: string }>();
  private layers: { at: number; view: Promise<LayersView> } | null = null;
  private readonly now: () => number;

  constructor(private readonly options: DashboardOptions) {
    this.now = options.now ?? Date.now;
    this.probe = new GatewayProbe({ paths: options.paths, config: options.config, ...options.probe });
    this.feed = new EventFeed({
      url: () => this.probe.current.url,
      headers: () => this.probe.authHeaders(),
      now: this.now,
    });
    const dir = assetsDir();
    for (const [route, asset] of Object.entries(ASSETS))
      this.assets.set(route, { body: readFileSync(`${dir}${asset.file}`), type: asset.type });
  }

  /** Start probing the gateway (and following its events while it serves them). */
  start(): void {
    this.probe.start();
    this.watchCapabilities = setInterval(() => this.feed.want(this.eventsServed()), 500);
    this.watchCapabilities.unref();
  }

  async stop(): Promise<void> {
    if (this.watchCapabilities) clearInterval(this.watchCapabilities);
    this.feed.stop();
    await this.probe.stop();
  }

  private watchCapabilities: NodeJS.Timeout | null = null;

  private eventsServed(): boolean {
    const view = this.probe.current;
    if (view.reachable !== true || view.capabilities?.served !== true) return false;
    const list = view.capabilities.list;
    return EVENTS_CAPABILITIES.some((name) => list.includes(name));
  }

  /** The Node request listener; it never throws and always answers. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.route(req, res).catch((error: unknown) => {
      const problem =
        error instanceof DashboardError
          ? error
          : error instanceof HttpRequestError
            ? new DashboardError(error.status, error.code, error.message)
            : new DashboardError(
                500,
                "internal",
                `the dashboard failed (a bug in Tenax): ${errorMessage(error)}`,
              );
      send(res, problem.status, problem.toJSON());
    });
  };

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A page elsewhere can point its own host name at 127.0.0.1 (DNS rebinding) and read the
    // transcripts through the browser; only a loopback Host gets an answer.
    if (!loopbackHostHeader(req.headers.host))
      throw new DashboardError(
        403,
        "host_not_allowed",
        `the dashboard answers only requests addressed to a loopback host, not ${JSON.stringify(req.headers.host ?? "")}`,
        "open it as http://127.0.0.1:PORT or http://localhost:PORT",
      );
    const url = new URL(req.url ?? "/", "http://dashboard");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    if (req.method !== "GET" && req.method !== "HEAD")
      throw new DashboardError(
        405,
        "method_not_allowed",
        `the dashboard only reads: ${req.method} is not allowed`,
      );
    const asset = this.assets.get(path);
    if (asset) {
      res.writeHead(200, { "content-type": asset.type, ...SECURITY_HEADERS });
      res.end(req.method === "HEAD" ? undefined : asset.body);
      return;
    }
    if (path === "/api/overview") return send(res, 200, this.overview());
    if (path === "/api/gateway") return send(res, 200, await this.gatewayView());
    if (path === "/api/layers") return send(res, 200, await this.cachedLayers());
    if (path === "/api/sessions") {
      const limit = intParam(url, "limit", 50, 1, 500);
      const offset = intParam(url, "offset", 0, 0, Number.MAX_SAFE_INTEGER);
      return send(res, 200, { sessions: listSessions(this.options.paths, limit, offset) });
    }
    const session = /^\/api\/sessions\/([^/]+)$/.exec(path);
    if (session)
      return send(res, 200, transcript(this.options.paths, decodePathPart(session[1] ?? "", "session id")));
    if (path === "/api/search") {
      const query = url.searchParams.get("q")?.trim() ?? "";
      if (query === "")
        throw new DashboardError(400, "empty_query", "give the words to search for: /api/search?q=WORDS");
      return send(res, 200, searchSessions(this.options.paths, query));
    }
    if (path === "/api/events") {
      const after = intParam(url, "after", 0, 0, Number.MAX_SAFE_INTEGER);
      return send(res, 200, {
        served: this.eventsServed(),
        following: this.feed.following,
        error: this.feed.error,
        events: this.feed.after(after),
      });
    }
    throw new DashboardError(404, "not_found", `no dashboard route ${path}`);
  }

  /**
   * The probe's view, with what the profile's `tenax up` says (restarting, gave up) and the advice
   * for the way the gateway was started. When up reported a change since the last probe (the
   * gateway just died or came back), the gateway is probed again first, so the two agree.
   */
  private async gatewayView(): Promise<
    GatewayView & { supervisor: UpState | null; advice: GatewayAdvice | null }
  > {
    const { paths } = this.options;
    const up = readUpState(paths);
    let view = this.probe.current;
    if (up !== null && up.updated_at > (view.checked_at ?? 0)) view = await this.probe.refresh();
    const down = view.reachable === false || (up !== null && up.gateway.state !== "running");
    const advice = down
      ? gatewayAdvice({
          paths,
          now: this.now(),
          up,
          holder: readGatewayPid(paths.pid),
          launch: readGatewayLaunch(paths.pid),
          // This dashboard runs; outside a tenax up, `tenax up` would find its port taken.
          dashboardRunning: true,
        })
      : null;
    return { ...view, supervisor: up, advice };
  }

  private overview() {
    return {
      profile: this.options.paths.name,
      version: this.options.version,
      pid: process.pid,
      state_db: this.options.paths.state,
      now: this.now(),
    };
  }

  private cachedLayers(): Promise<LayersView> {
    const now = this.now();
    const cacheMs = this.options.layersCacheMs ?? 1000;
    if (this.layers === null || now - this.layers.at >= cacheMs)
      this.layers = { at: now, view: readLayers(this.options.paths, now) };
    return this.layers.view;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendJson(res, status, body, SECURITY_HEADERS);
}

function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < min || value > max)
    throw new DashboardError(
      400,
      "invalid_query",
      `${name} must be a whole number from ${min} to ${max}, not "${raw}"`,
    );
  return value;
}
