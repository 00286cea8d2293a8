// A named leadership lock on PostgreSQL (`platforms`: which gateway of the profile runs the chat
// platforms): a session advisory lock keyed by sha256("tenax:lock:NAME"), tried every retryMs and
// held on a connection of its own (pg-advisory-lock.ts). The holder writes its owner tag into its
// session's application_name, so a contender reads who holds it from pg_stat_activity, from the
// lock itself, never from a row that could outlive it.
import type { InstanceLockState, NamedLock, NamedLockOptions, NamedLockState } from "../instance-types.js";
import { type AdvisoryHolder, type LockConnectionSettings, PgAdvisoryLock } from "./pg-advisory-lock.js";
import { advisoryKey } from "./pg-instance-lock.js";

/** A name is short and plain, so the holder's tag fits in application_name (63 bytes). */
const LOCK_NAME = /^[a-z][a-z0-9_-]{0,15}$/;

export function namedLockKey(name: string): string {
  return advisoryKey(`tenax:lock:${name}`);
}

export class PgNamedLock implements NamedLock {
  private readonly lock: PgAdvisoryLock;
  private readonly prefix: string;

  constructor(
    readonly name: string,
    private readonly options: NamedLockOptions,
    settings: Omit<LockConnectionSettings, "retryMs">,
  ) {
    if (!LOCK_NAME.test(name))
      throw new RangeError(
        `store: a lock name is 1-16 of a-z, 0-9, _ and -, starting with a letter; not ${name}`,
      );
    this.prefix = `tenax lock ${name} `;
    const applicationName = `${this.prefix}${options.self}`;
    if (Buffer.byteLength(applicationName) > 63)
      throw new RangeError(`store: the owner tag ${options.self} is too long to name the holder of a lock`);
    this.lock = new PgAdvisoryLock(
      {
        key: namedLockKey(name),
        applicationName,
        probeWhileHeld: true,
        heldElsewhere: (holders) => this.heldElsewhere(holders),
      },
      { ...settings, retryMs: options.retryMs ?? 1_000 },
      (state: InstanceLockState) => this.changed(state),
    );
  }

  get state(): NamedLockState {
    switch (this.lock.state) {
      case "acquiring":
        return "trying";
      case "held":
        return "held";
      case "lost":
      case "conflict":
        return "standby";
      case "released":
        return "released";
      default:
        return this.lock.state satisfies never;
    }
  }

  get holder(): string | null {
    if (this.lock.state === "held") return this.options.self;
    return this.holderOf(this.lock.holders);
  }

  get detail(): string | null {
    return this.lock.detail;
  }

  async start(): Promise<void> {
    await this.lock.take();
    this.lock.keepTrying();
  }

  async release(): Promise<void> {
    await this.lock.release();
  }

  private holderOf(holders: readonly AdvisoryHolder[]): string | null {
    for (const h of holders) if (h.app?.startsWith(this.prefix)) return h.app.slice(this.prefix.length);
    return null;
  }

  private heldElsewhere(holders: AdvisoryHolder[]): string {
    if (holders.length === 0) return `the ${this.name} lock was taken by another session, gone since`;
    const who = this.holderOf(holders);
    const backend = holders.map((h) => `backend ${h.pid}${h.addr ? ` from ${h.addr}` : ""}`).join(", ");
    return `the ${this.name} lock is held by ${who ?? "a session that names no instance"} (${backend})`;
  }

  private changed(_state: InstanceLockState): void {
    try {
      this.options.onChange(this);
    } catch {
      // A listener's failure must never break the lock.
    }
  }
}
