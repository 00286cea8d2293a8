// An instance's liveness on PostgreSQL: a session-level advisory lock of its own
// (pg-advisory-lock.ts), keyed by its id. It must be taken at the start (another holder is a bug
// or a session of ours the server has not ended yet); once held, it is taken again by itself after
// its connection breaks (a database restart).
import { createHash } from "node:crypto";
import type { InstanceLock, InstanceLockState } from "../instance-types.js";
import { type LockConnectionSettings, PgAdvisoryLock } from "./pg-advisory-lock.js";

export { HELD_ADVISORY_KEYS, type LockConnectionSettings } from "./pg-advisory-lock.js";

/**
 * The lock's bigint key, as decimal text (a JS number cannot hold 64 bits): the first 8 bytes of
 * sha256("tenax:instance:ID"), signed. Ids are unique, so two instances never share a key.
 */
export function instanceLockKey(id: string): string {
  return advisoryKey(`tenax:instance:${id}`);
}

/** The first 8 bytes of sha256(text), signed, as decimal text: an advisory lock's bigint key. */
export function advisoryKey(text: string): string {
  return createHash("sha256").update(text).digest().readBigInt64BE(0).toString();
}

export class PgInstanceLock implements InstanceLock {
  private readonly lock: PgAdvisoryLock;

  constructor(
    private readonly id: string,
    settings: LockConnectionSettings,
    onChange: (state: InstanceLockState, detail: string | null) => void,
  ) {
    this.lock = new PgAdvisoryLock(
      {
        key: instanceLockKey(id),
        applicationName: "tenax instance lock",
        heldElsewhere: (holders) => {
          const who = holders.map((h) => `backend ${h.pid}${h.addr ? ` from ${h.addr}` : ""}`).join(", ");
          return `the lock of instance ${id} is held by another session (${who || "gone since"}); instance ids are unique, so this is a session of ours the server has not ended yet, or a bug`;
        },
      },
      settings,
      onChange,
    );
  }

  get key(): string {
    return this.lock.key;
  }

  get state(): InstanceLockState {
    return this.lock.state;
  }

  get detail(): string | null {
    return this.lock.detail;
  }

  async acquire(): Promise<void> {
    await this.lock.take();
    if (this.lock.state !== "held")
      throw new Error(this.lock.detail ?? `the lock of instance ${this.id} is not held`);
    this.lock.keepTrying();
  }

  async release(): Promise<void> {
    await this.lock.release();
  }
}
