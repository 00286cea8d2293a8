// An instance's liveness on PostgreSQL: a session-level advisory lock held on a connection of its
// own (a pg.Client, never the pool's, so pool churn never drops it). When the process dies its
// connection closes and the server drops the lock at once, whatever host it ran on. A connection
// that breaks while we live (a database restart) is noticed by its 'error'/'end' listeners (an
// unhandled 'error' would end the process), reported, and taken again once the database is back.
import { createHash } from "node:crypto";
import pg from "pg";
import type { Timers } from "../../core/deps.js";
import type { InstanceLock, InstanceLockState } from "../instance-types.js";
import { describeError } from "./pg-failures.js";

/**
 * The lock's bigint key, as decimal text (a JS number cannot hold 64 bits): the first 8 bytes of
 * sha256("tenax:instance:ID"), signed. Ids are unique, so two instances never share a key.
 */
export function instanceLockKey(id: string): string {
  return createHash("sha256").update(`tenax:instance:${id}`).digest().readBigInt64BE(0).toString();
}

/**
 * A held advisory lock's bigint key from pg_locks: its high half is `classid`, its low half `objid`
 * (both oid, unsigned 32-bit), and `objsubid` is 1 (2 marks a lock taken with two int4 keys). The
 * shift wraps, so a key with its top bit set comes back negative, as it was taken.
 */
export const HELD_ADVISORY_KEYS = `SELECT ((l.classid::bigint << 32) | l.objid::bigint)::text AS key, l.pid
  FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

export interface LockConnectionSettings {
  url: string;
  connectTimeoutMs: number;
  timers: Timers;
  /** While the lock is not held after it was, how often it is tried again. */
  retryMs: number;
}

/** How long a statement on the lock's own connection may take before it counts as broken. */
const LOCK_QUERY_TIMEOUT_MS = 5_000;

export class PgInstanceLock implements InstanceLock {
  private current: InstanceLockState = "acquiring";
  private why: string | null = null;
  private client: pg.Client | null = null;
  private timer: unknown = null;
  /** Taken again by itself only once it was held once (acquire() answers the first attempt). */
  private retrying = false;
  readonly key: string;

  constructor(
    private readonly id: string,
    private readonly settings: LockConnectionSettings,
    private readonly onChange: (state: InstanceLockState, detail: string | null) => void,
  ) {
    this.key = instanceLockKey(id);
  }

  get state(): InstanceLockState {
    return this.current;
  }

  get detail(): string | null {
    return this.why;
  }

  async acquire(): Promise<void> {
    await this.take();
    if (this.current !== "held") throw new Error(this.why ?? `the lock of instance ${this.id} is not held`);
    this.retrying = true;
  }

  async release(): Promise<void> {
    if (this.current === "released") return;
    this.set("released", null);
    if (this.timer !== null) this.settings.timers.clear(this.timer);
    this.timer = null;
    const client = this.client;
    this.client = null;
    if (client === null) return;
    // Closing the session drops the lock too; the unlock says so at once, should the close linger.
    await this.bounded(client.query("SELECT pg_advisory_unlock($1::bigint)", [this.key])).catch(
      () => undefined,
    );
    await this.bounded(client.end()).catch(() => undefined);
  }

  private set(state: InstanceLockState, detail: string | null): void {
    if (this.current === "released") return;
    const changed = state !== this.current || detail !== this.why;
    this.current = state;
    this.why = detail;
    if (!changed) return;
    try {
      this.onChange(state, detail);
    } catch {
      // A listener's failure must never break the lock.
    }
  }

  /** One attempt on a new connection; the state says how it went (failures are thrown too). */
  private async take(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.settings.url,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      query_timeout: LOCK_QUERY_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5_000,
      application_name: "tenax instance lock",
    });
    client.on("error", (error) => this.broken(client, describeError(error)));
    client.on("end", () => this.broken(client, "its connection to the database closed"));
    this.client = client;
    try {
      await client.connect();
      const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1::bigint) AS ok", [
        this.key,
      ]);
      if (this.client !== client) throw new Error("released while being taken");
      if (rows[0]?.ok === true) {
        this.set("held", null);
        return;
      }
      const holders = await client.query<{ pid: number; addr: string | null }>(
        `SELECT h.pid, a.client_addr::text AS addr FROM (${HELD_ADVISORY_KEYS}) h
           LEFT JOIN pg_stat_activity a ON a.pid = h.pid WHERE h.key = $1`,
        [this.key],
      );
      const who = holders.rows.map((h) => `backend ${h.pid}${h.addr ? ` from ${h.addr}` : ""}`).join(", ");
      throw new LockConflict(
        `the lock of instance ${this.id} is held by another session (${who || "gone since"}); instance ids are unique, so this is a session of ours the server has not ended yet, or a bug`,
      );
    } catch (error) {
      if (this.client === client) this.client = null;
      void this.bounded(client.end()).catch(() => undefined);
      if (error instanceof LockConflict) this.set("conflict", error.message);
      else if (this.current !== "acquiring") this.set("lost", describeError(error));
      else this.why = describeError(error);
      throw error;
    }
  }

  /** The held lock's connection broke: say so, and take it again on a new one. */
  private broken(client: pg.Client, detail: string): void {
    if (this.client !== client || this.current !== "held") return;
    this.client = null;
    void this.bounded(client.end()).catch(() => undefined);
    this.set("lost", `the lock's connection broke: ${detail}`);
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (!this.retrying || this.timer !== null || this.current === "released") return;
    this.timer = this.settings.timers.set(() => {
      this.timer = null;
      this.take()
        .catch(() => undefined)
        .finally(() => {
          if (this.current !== "held") this.scheduleRetry();
        });
    }, this.settings.retryMs);
  }

  /** A driver call that may never settle on a dead connection, given up after a while. */
  private bounded<T>(promise: Promise<T>): Promise<T | undefined> {
    return new Promise((resolve, reject) => {
      const timer = this.settings.timers.set(() => resolve(undefined), LOCK_QUERY_TIMEOUT_MS);
      promise.then(
        (value) => {
          this.settings.timers.clear(timer);
          resolve(value);
        },
        (error: unknown) => {
          this.settings.timers.clear(timer);
          reject(error);
        },
      );
    });
  }
}

class LockConflict extends Error {
  override name = "LockConflict";
}
