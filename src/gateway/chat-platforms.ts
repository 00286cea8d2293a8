// The chat platforms in a running gateway, start to stop: the adapters and the outbox (from
// platforms.ts), the chat service over the gateway as its host, and the four moments the
// gateway's own lifecycle calls in: resume (a chat turn resumed after a crash is handed to the
// service, which says "back online" once per chat, then answers), start (the platforms' lock is
// tried; while this gateway holds it the inbox's pending messages run and the adapters connect,
// platforms-holder.ts), the stop's notice (before the drain, one message to each chat with a turn
// running) and the stop itself (after the drain, before the store closes; the lock let go).
import type { Agent } from "../agent/agent.js";
import type { PlatformEvent } from "../agent/events.js";
import type { ReapedTurn } from "../agent/reap.js";
import type { ResumeReport } from "../agent/resume.js";
import type { TenaxConfig } from "../config/schema.js";
import type { Owners } from "../core/owners.js";
import type { PlatformLive, PlatformsHolding } from "../health/platforms-component.js";
import type { Outbox } from "../outbox/outbox.js";
import { ChatService } from "../platforms/chat-service.js";
import { listChatSessions } from "../platforms/chat-sessions.js";
import type { StorePort } from "../store/port.js";
import { gatewayChatHost } from "./chat-host.js";
import type { Gateway, TurnWatcher } from "./gateway.js";
import { buildPlatforms, type GatewayPlatforms } from "./platforms.js";
import { PlatformsHolder } from "./platforms-holder.js";

export interface GatewayChat {
  platforms: GatewayPlatforms;
  service: ChatService;
  live(): Record<string, PlatformLive>;
  /** Whether this gateway holds the platforms (and runs them), and who does. */
  holding(): PlatformsHolding;
  /** The follower of a resumed turn that is a chat's (its approvals reach the chat). */
  watcherFor(sessionId: string): Promise<TurnWatcher | undefined>;
  /**
   * The chat turns the last stop interrupted (the drain ran out) that no crash reaped: resumed
   * with the reaped ones, so the chat gets its answer after the restart without a /retry.
   */
  interruptedByStop(alreadyReaped: readonly ReapedTurn[]): Promise<ReapedTurn[]>;
  /** After the resume: hand each resumed chat turn to the service. */
  resumed(report: ResumeReport): void;
  /**
   * Try the platforms' lock, and keep trying; while held, run what the inbox holds and connect
   * the adapters. Resolves after the first try (the platforms started, when it won).
   */
  start(): Promise<void>;
  /** Before the drain: tell each chat with a running turn, within `timeoutMs`; never throws. */
  notifyShutdown(restarting: boolean, timeoutMs?: number): Promise<{ chats: number; sent: number }>;
  /** Start nothing new (at the first stop signal). */
  quiesce(): void;
  /** After the drain: stop receiving and sending, let the lock go; what is queued waits for the next holder. */
  stop(): Promise<void>;
}

export interface ChatPlatformsOptions {
  config: TenaxConfig;
  store: StorePort;
  /** The gateway's outbox: the platforms' sends are channels of it. */
  outbox: Outbox;
  gateway: Gateway;
  agent: Agent;
  /** This process in leases (turns): the platforms' lock names its holder by `self`. */
  owners: Owners;
  onEvent: (event: PlatformEvent) => void;
  log: { info(line: string): void; warn(line: string): void };
}

/** The chat platforms config.yaml names, or null when it names none. */
export async function buildChatPlatforms(options: ChatPlatformsOptions): Promise<GatewayChat | null> {
  const { config, log } = options;
  const platforms = await buildPlatforms({
    config,
    outbox: options.outbox,
    onEvent: options.onEvent,
    onTrouble: (platform, message) =>
      message === null ? log.info(`${platform}: connected again`) : log.warn(`${platform}: ${message}`),
  });
  if (platforms.adapters.length === 0) return null;
  const allowedUsers: Record<string, string[] | "anyone"> = {};
  if (config.platforms.telegram) allowedUsers.telegram = config.platforms.telegram.allowed_users.map(String);
  // The webhook platform's callers hold the gateway key: every user they name is theirs.
  if (config.platforms.webhook) allowedUsers.webhook = "anyone";
  const service = new ChatService({
    store: options.store,
    host: gatewayChatHost(options.gateway, options.agent),
    adapters: platforms.adapters,
    outbox: platforms.outbox,
    allowedUsers,
    // Another live gateway's turn (it held the platforms before), or one this gateway's watchdog
    // resumed: either commits its result, which the inbox then answers from.
    stillRuns: (owner) => ["alive", "mine"].includes(options.owners.state(owner)),
    onError: (platform, message) => log.warn(`${platform}: ${message}`),
  });
  // Set at quiesce (a stop began): winning the lock then starts nothing.
  let quiescing = false;
  // Counts the terms this gateway held the platforms; a term's recheck ends with it.
  let term = 0;
  const recover = async (first: boolean, mine: number): Promise<void> => {
    if (mine !== term || quiescing) return;
    const r = await service.recover();
    if (first && r.queued + r.resumed + r.answered + r.inline + r.waiting > 0)
      log.info(
        `chat platforms: from the inbox, ${r.queued} message(s) queued again, ${r.resumed} answered by resumed turns, ${r.answered} answered from the store, ${r.inline} command(s) run again, ${r.waiting} waiting for a turn still running`,
      );
    // A message whose turn still runs (another gateway's, which held the platforms before, or a
    // resume here): looked at again until that turn ended, then answered from it, once.
    if (r.waiting > 0)
      setTimeout(
        () => void recover(false, mine).catch((e) => log.warn(`chat platforms: ${e}`)),
        2_000,
      ).unref();
  };
  const holder = new PlatformsHolder({
    lock: (name, lockOptions) => options.store.instances().namedLock(name, lockOptions),
    self: options.owners.self,
    log,
    term: {
      async begin() {
        if (quiescing) return;
        const mine = ++term;
        service.restart();
        await recover(true, mine);
        await platforms.start(() => service.sink);
        for (const adapter of platforms.adapters) log.info(`${adapter.name}: receiving (chat platform)`);
      },
      async end() {
        term++;
        service.stop();
        await platforms.stop();
      },
    },
  });
  return {
    platforms,
    service,
    live: () => platforms.live(),
    holding: () => holder.holding(),
    async watcherFor(sessionId) {
      const onEvent = await service.eventsFor(sessionId);
      return onEvent === undefined ? undefined : { onEvent, shutdown: () => {} };
    },
    async interruptedByStop(alreadyReaped) {
      const known = new Set(alreadyReaped.map((t) => t.turn_id));
      const out: ReapedTurn[] = [];
      for (const record of await listChatSessions(options.store)) {
        const mark = record.running;
        if (mark === null) continue;
        const turn = (await options.store.getTurns(mark.session_id))[mark.turns_before];
        if (turn === undefined || turn.status !== "interrupted" || known.has(turn.id)) continue;
        known.add(turn.id);
        out.push({ turn_id: turn.id, session_id: turn.session_id, interrupt_count: turn.interrupt_count });
      }
      return out;
    },
    async resumed(report) {
      for (const turn of report.resumed) await service.resumed(turn.session_id, turn.result);
    },
    start: () => holder.start(),
    notifyShutdown: (restarting, timeoutMs = 3_000) => service.shutdownNotice({ restarting, timeoutMs }),
    quiesce: () => {
      quiescing = true;
      service.stop();
    },
    async stop() {
      service.stop();
      // The answers of turns the drain saw end are committed before the store closes (bounded:
      // one that cannot be written stays pending and is answered from the store at the next start).
      const within = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
      await Promise.race([service.idle(), within(5_000)]);
      // And sent, if the platform takes them at once; what it does not waits for the next start.
      await Promise.race([platforms.outbox.kick(), within(3_000)]);
      await holder.stop();
    },
  };
}
