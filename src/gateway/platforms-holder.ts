// Which gateway of the profile runs the chat platforms: the holder of the store's `platforms` lock
// (a named lock, store/instance-types.ts). Only the holder receives (Telegram's poller or webhook,
// the webhook platform's route), runs the chat lanes and sends the platforms' outbox entries; every
// other gateway serves the rest and keeps trying the lock. Winning it starts the platforms as a
// gateway start does (the inbox recovered, the adapters connected, what waits sent); losing it (a
// database restart, and another took it) stops them at once: silent for seconds rather than
// answering twice. Changes are applied one at a time, in order, so a start and a stop never overlap.
import type { PlatformsHolding } from "../health/platforms-component.js";
import type { NamedLock, NamedLockOptions } from "../store/instance-types.js";

export interface PlatformsTerm {
  /** Start the platforms: recover the inbox, connect, send what waits. */
  begin(): Promise<void>;
  /** Stop receiving and sending at once; running turns finish and commit their answers. */
  end(): Promise<void>;
}

export interface PlatformsHolderOptions {
  /** store.instances().namedLock, bound to the store. */
  lock(name: string, options: NamedLockOptions): NamedLock;
  self: string;
  term: PlatformsTerm;
  log: { info(line: string): void; warn(line: string): void };
  retryMs?: number;
}

export const PLATFORMS_LOCK = "platforms";

export class PlatformsHolder {
  private readonly lock: NamedLock;
  private running = false;
  private stopped = false;
  private chain: Promise<void> = Promise.resolve();
  /** The holder last logged, so a standby says who holds the platforms once per change. */
  private told: string | null | undefined;

  constructor(private readonly options: PlatformsHolderOptions) {
    this.lock = options.lock(PLATFORMS_LOCK, {
      self: options.self,
      onChange: () => void this.apply(),
      ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
    });
  }

  /** Try the lock (and keep trying); resolves once the platforms started, when the first try won. */
  async start(): Promise<void> {
    await this.lock.start();
    await this.apply();
  }

  holding(): PlatformsHolding {
    return {
      holder: this.lock.state === "held",
      held_by: this.lock.holder,
      self: this.options.self,
      detail: this.lock.state === "held" ? null : this.lock.detail,
    };
  }

  /** Stop the platforms if they run, then let the lock go (another gateway takes it within seconds). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.apply();
    await this.lock.release();
  }

  /** Bring the platforms in line with the lock; queued behind the change before. */
  private apply(): Promise<void> {
    this.chain = this.chain.then(() => this.step()).catch(() => undefined);
    return this.chain;
  }

  private async step(): Promise<void> {
    const want = !this.stopped && this.lock.state === "held";
    this.tell();
    if (want === this.running) return;
    this.running = want;
    if (want) {
      this.options.log.info(
        `chat platforms: this gateway (${this.options.self}) holds them now: starting them`,
      );
      await this.options.term.begin().catch((error: unknown) => {
        this.options.log.warn(`chat platforms: starting them failed: ${(error as Error).message}`);
      });
      return;
    }
    if (!this.stopped)
      this.options.log.warn(
        `chat platforms: this gateway lost their lock (${this.lock.detail ?? "not held"}): stopped them at once; another gateway may hold them now`,
      );
    await this.options.term.end();
  }

  /** One line when the holder seen from a standby changes. */
  private tell(): void {
    if (this.lock.state === "held" || this.stopped || this.lock.state === "trying") return;
    const holder = this.lock.holder;
    if (holder === this.told) return;
    this.told = holder;
    this.options.log.info(
      `chat platforms: ${holder === null ? `not held here (${this.lock.detail ?? "unknown why"})` : `held by ${holder}`}; this gateway serves everything else and keeps trying their lock`,
    );
  }
}
