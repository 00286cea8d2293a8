// The dashboard: the page's files, the gateway probe and event feed, and the views the page polls
// (layers, gateway, overview, recent events). Its HTTP app is app.ts (routes under routes/); the
// port is opened by the `tenax dashboard` command.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyRequest } from "fastify";
import type { AuditTrail } from "../agent/audit-trail.js";
import type { TenaxConfig } from "../config/schema.js";
import { type GatewayAdvice, gatewayAdvice } from "../health/gateway-advice.js";
import type { OutsideView } from "../health/gateway-status.js";
import { readGatewayLaunch, readGatewayPid } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { readUpState, type UpState } from "../profile/up-state.js";
import type { StorePort } from "../store/port.js";
import { engineOf, openProfileStore, releaseStore } from "../store/registry.js";
import { DashboardAuth } from "./auth/dashboard-auth.js";
import { loginPage } from "./auth/login-page.js";
import { EVENTS_CAPABILITIES, EventFeed } from "./event-feed.js";
import { GatewayProbe, type GatewayProbeOptions, type GatewayView } from "./gateway-probe.js";
import { closeStoreViews, type LayersView, readLayers, storeWhere } from "./store-view.js";

export interface DashboardOptions {
  paths: ProfilePaths;
  /** The profile's config, or how to get it as it is now (config.yaml may be edited while it runs). */
  config: TenaxConfig | (() => TenaxConfig);
  version: string;
  probe?: Partial<Pick<GatewayProbeOptions, "intervalMs" | "timeoutMs" | "deps">>;
  /** How long one status report is reused (default 1000 ms): many open pages, one read. */
  layersCacheMs?: number;
  now?: () => number;
  /**
   * The profile's writable store, where logins are kept; by default the engine config.yaml names,
   * with its defaults (the command passes its full store settings).
   */
  openStore?: () => Promise<StorePort>;
  /** Where the dashboard listens, once it does: its names pass the Host check. */
  listening?: () => { host: string; port: number } | null;
  /** The audit trail of this process (logs/events.jsonl); none by default (tests in-process). */
  audit?: AuditTrail | null;
}

const JS = "text/javascript; charset=utf-8";
const ASSETS: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: JS },
  "/dom.js": { file: "dom.js", type: JS },
  "/transcript.js": { file: "transcript.js", type: JS },
  "/mcp.js": { file: "mcp.js", type: JS },
  "/logins.js": { file: "logins.js", type: JS },
  "/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};

/** The routes of the page's files. */
export const ASSET_ROUTES: readonly string[] = Object.keys(ASSETS);

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

export class Dashboard {
  readonly probe: GatewayProbe;
  readonly feed: EventFeed;
  private readonly assets = new Map<string, { body: Buffer; type: string }>();
  private layers: { at: number; view: Promise<LayersView> } | null = null;
  private readonly clock: () => number;

  readonly auth: DashboardAuth;
  /** The login each request was let in with (null in mode none), set by the gate. */
  private readonly logins = new WeakMap<FastifyRequest, string | null>();

  constructor(private readonly options: DashboardOptions) {
    this.clock = options.now ?? Date.now;
    this.auth = new DashboardAuth({
      config: () => this.config.dashboard.auth,
      openStore: options.openStore ?? (() => openProfileStore(options.paths, engineOf(this.config.store))),
      releaseStore,
      audit: options.audit ?? null,
      publish: (event) => this.feed.local(event),
      now: this.clock,
    });
    this.probe = new GatewayProbe({ paths: options.paths, config: options.config, ...options.probe });
    this.feed = new EventFeed({
      url: () => this.probe.current.url,
      headers: () => this.probe.authHeaders(),
      now: this.clock,
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
    await this.auth.close();
    await closeStoreViews();
  }

  /** The login page, with what went wrong with the credential presented (if one was). */
  loginPage(problem: { message: string; hint: string } | null): string {
    const { auth } = this.config.dashboard;
    return loginPage({
      mode: auth.mode === "oidc" ? "oidc" : "token",
      problem,
      profile: this.options.paths.name,
      ...(auth.oidc ? { issuer: auth.oidc.issuer } : {}),
    });
  }

  /** Note the login a request was let in with (the gate), and read it (the routes). */
  admit(request: FastifyRequest, loginId: string | null): void {
    this.logins.set(request, loginId);
  }

  loginOf(request: FastifyRequest): string | null {
    return this.logins.get(request) ?? null;
  }

  /** Where the dashboard listens, once it does. */
  listening(): { host: string; port: number } | null {
    return this.options.listening?.() ?? null;
  }

  /** The dashboard's clock. */
  now(): number {
    return this.clock();
  }

  private watchCapabilities: NodeJS.Timeout | null = null;

  private eventsServed(): boolean {
    const view = this.probe.current;
    if (view.reachable !== true || view.capabilities?.served !== true) return false;
    const list = view.capabilities.list;
    return EVENTS_CAPABILITIES.some((name) => list.includes(name));
  }

  /** A page file by its route (ASSET_ROUTES), read once at start. */
  asset(route: string): { body: Buffer; type: string } | undefined {
    return this.assets.get(route);
  }

  get paths(): ProfilePaths {
    return this.options.paths;
  }

  /** The config in force now (a live one is read again when config.yaml changed). */
  get config(): TenaxConfig {
    const { config } = this.options;
    return typeof config === "function" ? config() : config;
  }

  /** What the page's event list shows: whether the gateway serves events, and the ones after `after`. */
  events(after: number) {
    return {
      served: this.eventsServed(),
      following: this.feed.following,
      error: this.feed.error,
      events: this.feed.after(after),
    };
  }

  /**
   * The probe's view, with what the profile's `tenax up` says (restarting, gave up) and the advice
   * for the way the gateway was started. When up reported a change since the last probe (the
   * gateway just died or came back), the gateway is probed again first, so the two agree.
   */
  async gatewayView(): Promise<GatewayView & { supervisor: UpState | null; advice: GatewayAdvice | null }> {
    const { paths } = this.options;
    const up = readUpState(paths);
    let view = this.probe.current;
    if (up !== null && up.updated_at > (view.checked_at ?? 0)) view = await this.probe.refresh();
    const down = view.reachable === false || (up !== null && up.gateway.state !== "running");
    const advice = down
      ? gatewayAdvice({
          paths,
          now: this.clock(),
          up,
          holder: readGatewayPid(paths.pid),
          launch: readGatewayLaunch(paths.pid),
          // This dashboard runs; outside a tenax up, `tenax up` would find its port taken.
          dashboardRunning: true,
        })
      : null;
    return { ...view, supervisor: up, advice };
  }

  overview() {
    return {
      profile: this.options.paths.name,
      version: this.options.version,
      pid: process.pid,
      state_db: this.options.paths.state,
      /** Where the store is read: state.db, or the PostgreSQL URL without its password. */
      store: storeWhere(this.options.paths),
      now: this.clock(),
    };
  }

  /**
   * Every layer as `tenax status` tells it, from the probe's last look at the gateway (the first
   * look is awaited): the tiles, the overall state and status agree component by component.
   */
  cachedLayers(): Promise<LayersView> {
    const now = this.clock();
    const cacheMs = this.options.layersCacheMs ?? 1000;
    if (this.layers === null || now - this.layers.at >= cacheMs)
      this.layers = { at: now, view: readLayers(this.options.paths, now, () => this.lastLook()) };
    return this.layers.view;
  }

  private async lastLook(): Promise<OutsideView> {
    const seen = this.probe.outside;
    if (seen !== null) return seen;
    await this.probe.refresh();
    const first = this.probe.outside;
    if (first === null) throw new Error("the gateway probe ended without a look (a bug in Tenax)");
    return first;
  }
}
