// The parts of a gateway process, wired to each other once its agent is open: the observability
// (feed, health monitor, log), the Gateway itself, the runs registry, the one outbox, the cron
// engine and jobs, the chat platforms, and the HTTP app. Nothing here starts work or opens the
// port: run.ts does, in order. What the parts learn later (the bound address, cron's numbers once
// it runs) is in `late`, which health reads only when asked.

import { join } from "node:path";
import { feedOfMcpEvent } from "../agent/event-feed.js";
import type { OpenedAgent } from "../agent/setup.js";
import { modelProblem } from "../config/model-check.js";
import { platformProblem } from "../config/platform-check.js";
import type { TenaxConfig } from "../config/schema.js";
import type { RotatingLog } from "../core/log-file.js";
import type { Redactor } from "../core/redact.js";
import { cronChannel } from "../cron/delivery.js";
import { CronEngine } from "../cron/engine.js";
import { finishOps } from "../cron/finish.js";
import type { CronEvent, CronStats } from "../cron/host.js";
import { CronJobs, profileTimezone } from "../cron/jobs.js";
import type { PlatformLive, PlatformsHolding } from "../health/platforms-component.js";
import type { App } from "../http/app.js";
import { Outbox } from "../outbox/outbox.js";
import type { ProfilePaths } from "../profile/paths.js";
import { buildGatewayApp } from "./app.js";
import { buildChatPlatforms, type GatewayChat } from "./chat-platforms.js";
import { gatewayCronHost } from "./cron-host.js";
import { Gateway } from "./gateway.js";
import { type Observability, startObservability } from "./observability.js";
import { RunRegistry } from "./runs.js";

/** Lines for the operator (also written to logs/gateway.log). */
export interface OperatorLines {
  info(line: string): void;
  warn(line: string): void;
}

export interface PartsInput {
  paths: ProfilePaths;
  config: TenaxConfig;
  cwd: string;
  version: string;
  opened: OpenedAgent;
  log: RotatingLog;
  redactor: Redactor;
  out: OperatorLines;
}

/** What is known only after the parts are built; read by health when asked. */
export interface LateFacts {
  readonly startedAt: number;
  address: string | null;
  listeningAt: { host: string; port: number } | null;
  /** The cron engine's numbers, once it runs (cron.enabled). */
  cronStats: (() => CronStats) | null;
  /** The chat platforms' connections and holder, once they are made. */
  chatLive: (() => Record<string, PlatformLive>) | null;
  chatHolding: (() => PlatformsHolding) | null;
}

export interface GatewayParts {
  observed: Observability;
  gateway: Gateway;
  runs: RunRegistry;
  outbox: Outbox;
  cron: CronEngine;
  chat: GatewayChat | null;
  app: App;
  late: LateFacts;
}

export async function buildGatewayParts(input: PartsInput): Promise<GatewayParts> {
  const { opened, config, out } = input;
  const late: LateFacts = {
    startedAt: Date.now(),
    address: null,
    listeningAt: null,
    cronStats: null,
    chatLive: null,
    chatHolding: null,
  };
  // Each turn this gateway takes over is told in its instance's row, for /health everywhere.
  opened.store.on((event) => {
    if (event.type === "turn_takeover")
      opened.instances?.mergeMeta({ last_takeover: { turn_id: event.turn_id, at: Date.now() } });
  });
  // `gateway` is made just below; the monitor reads it only when asked.
  const observed = observe(input, late, () => gateway);
  const gateway = new Gateway({
    agent: opened.agent,
    store: opened.store,
    config,
    cwd: input.cwd,
    onTurnEvent: (sessionId, event) => observed.routes.onTurnEvent(sessionId, event),
  });
  const runs = new RunRegistry({
    store: opened.store,
    gateway,
    retentionMs: config.gateway.run_retention_hours * 3_600_000,
    onError: (what, error) => out.warn(`runs API: ${what} failed: ${(error as Error).message}`),
    approvals: opened.agent.approvals,
    owners: opened.owners,
  });
  const { outbox, cron, jobs } = buildCron(input, gateway, observed);
  const chat = await buildChat(input, gateway, outbox, observed);
  late.chatLive = chat === null ? null : () => chat.live();
  late.chatHolding = chat === null ? null : () => chat.holding();
  const app = buildGatewayApp({
    gateway,
    agent: opened.agent,
    store: opened.store,
    config,
    version: input.version,
    listening: () => late.listeningAt,
    health: observed.routes,
    runs,
    runOptions: {
      maxBufferedBytes: config.gateway.stream_buffer_kb * 1024,
      clientSystem: config.gateway.client_system,
    },
    cron: { jobs, runNow: async (name) => await cron.runNow(name) },
    platforms: {
      webhook: chat?.platforms.webhook ?? null,
      telegram: chat?.platforms.telegram ?? null,
      status: async () => await observed.monitor.platformsNow(),
      holding: () => late.chatHolding?.() ?? null,
    },
  });
  return { observed, gateway, runs, outbox, cron, chat, app, late };
}

/** The feed, the health monitor and the log, over the gateway as it is when asked. */
function observe(input: PartsInput, late: LateFacts, gateway: () => Gateway): Observability {
  const { paths, config, opened } = input;
  const mcp = opened.agent.mcp;
  const observed = startObservability({
    paths,
    config,
    store: opened.store,
    scheduler: opened.agent.scheduler,
    log: input.log,
    redactor: input.redactor,
    providers: {
      recorder: opened.agent.providerHealth,
      keyOf: async (provider) =>
        (await opened.agent.runtime.router.runtime(provider).pool.next(Date.now()))?.key ?? null,
    },
    cronStats: () => late.cronStats?.() ?? null,
    platformsLive: () => late.chatLive?.() ?? {},
    instances: { registry: opened.instances, owners: opened.owners, startedAt: late.startedAt },
    platformsHolding: () => late.chatHolding?.() ?? null,
    ...(mcp === null ? {} : { mcpLive: () => mcp.states() }),
    gateway: () => ({
      stopping: gateway().isStopping,
      turnsInFlight: gateway().turnsInFlight,
      maxTurns: config.gateway.max_turns,
      startedAt: late.startedAt,
      address: late.address,
    }),
  });
  // The MCP servers' restarts and timeouts go to the feed, and so to the log and the audit trail.
  mcp?.on((event) => observed.hub.publish(feedOfMcpEvent(event)));
  return observed;
}

/** The one outbox (cron's results and notices; each chat platform's messages are added later), cron's engine and its jobs. */
function buildCron(
  input: PartsInput,
  gateway: Gateway,
  observed: Observability,
): { outbox: Outbox; cron: CronEngine; jobs: CronJobs } {
  const { paths, config, opened, out } = input;
  const publishCron = (event: CronEvent) => {
    (event.type === "cron_delivery_failed" ||
      event.type === "cron_delivery_given_up" ||
      event.type === "cron_failing"
      ? out.warn
      : out.info)(event.message);
    const { type, layer, message, ...data } = event;
    observed.hub.publish({ type, layer, message, data });
  };
  const outbox = new Outbox({ store: opened.store, owners: opened.owners }).add(
    cronChannel({ outputDir: join(paths.cron, "output"), onEvent: publishCron }),
  );
  const cron = new CronEngine({
    store: opened.store,
    host: gatewayCronHost(gateway),
    owners: opened.owners,
    maxConcurrent: Math.min(config.cron.max_concurrent, config.gateway.max_turns),
    defaultTimeoutS: config.cron.default_timeout,
    sessionOp: (title) => opened.agent.newSessionOp({ title, source: "cron" }),
    onEvent: publishCron,
    finishOps: finishOps(opened.store),
    afterFinish: () => void outbox.kick(),
    onError: (what, error) => out.warn(`cron: ${what} failed: ${(error as Error).message}`),
  });
  const jobs = new CronJobs(opened.store, {
    timezone: profileTimezone(config),
    checkModel: (model) => modelProblem(config, model),
    checkPlatform: (platform) => platformProblem(config, platform),
    cwd: input.cwd,
    onChange: async () => await cron.changed(),
  });
  return { outbox, cron, jobs };
}

/** The chat platforms of config.yaml, their messages sent through the outbox; null when none. */
function buildChat(
  input: PartsInput,
  gateway: Gateway,
  outbox: Outbox,
  observed: Observability,
): Promise<GatewayChat | null> {
  const { config, opened, out } = input;
  return buildChatPlatforms({
    config,
    store: opened.store,
    outbox,
    gateway,
    agent: opened.agent,
    owners: opened.owners,
    onEvent: (event) => {
      (event.type === "platform_delivered" ? out.info : out.warn)(event.message);
      const { type, layer, message, ...data } = event;
      observed.hub.publish({ type, layer, message, data });
    },
    log: { info: out.info, warn: out.warn },
  });
}
