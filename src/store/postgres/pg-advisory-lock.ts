// A session-level advisory lock held on a connection of its own (a pg.Client, never the pool's, so
// pool churn never drops it): what an instance's liveness and a named leadership lock both are.
// When the holder's process dies its connection closes and the server drops the lock at once,
// whatever host it ran on. A connection that breaks while we live (a database restart) is noticed
// by its 'error'/'end' listeners (an unhandled 'error' would end the process) or by a probe while
// held, reported, and the lock taken again once the database is back. Attempts are tried, never
// waited on: a lock another session holds is tried again every retryMs on the same connection.
import pg from "pg";
import type { Timers } from "../../core/deps.js";
import type { InstanceLockState } from "../instance-types.js";
import { describeError } from "./pg-failures.js";

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
  /** While the lock is not held (after it was, or from the start for a tried lock), how often it is tried again. */
  retryMs: number;
}

/** A session holding a key, as pg_locks and pg_stat_activity show it. */
export interface AdvisoryHolder {
  pid: number;
  addr: string | null;
  /** The holder's application_name: a Tenax lock names its owner there. */
  app: string | null;
}

export interface AdvisoryLockSpec {
  /** The bigint key, as decimal text. */
  key: string;
  /** The session's application_name (at most 63 bytes): what other sessions read of the holder. */
  applicationName: string;
  /** Why it is not ours: a message from the sessions that hold it (empty: gone since). */
  heldElsewhere(holders: AdvisoryHolder[]): string;
  /** While held, check the connection every retryMs, so a silent break is seen within seconds. */
  probeWhileHeld?: boolean;
}

/** How long a statement on the lock's own connection may take before it counts as broken. */
const LOCK_QUERY_TIMEOUT_MS = 5_000;

export class PgAdvisoryLock {
  private current: InstanceLockState = "acquiring";
  private why: string | null = null;
  private others: AdvisoryHolder[] = [];
  private client: pg.Client | null = null;
  private timer: unknown = null;
  /** Taken again by itself once keepTrying() was called. */
  private retrying = false;
  private probing = false;

  constructor(
    private readonly spec: AdvisoryLockSpec,
    private readonly settings: LockConnectionSettings,
    private readonly onChange: (state: InstanceLockState, detail: string | null) => void,
  ) {}

  get key(): string {
    return this.spec.key;
  }

  get state(): InstanceLockState {
    return this.current;
  }

  get detail(): string | null {
    return this.why;
  }

  /** The sessions seen holding it at the last attempt that found it taken (empty otherwise). */
  get holders(): readonly AdvisoryHolder[] {
    return this.current === "conflict" ? this.others : [];
  }

  /** One attempt now; the state says how it went. Never throws. */
  async take(): Promise<void> {
    try {
      await this.attempt();
    } catch (error) {
      const client = this.client;
      this.client = null;
      if (client !== null) void this.bounded(client.end()).catch(() => undefined);
      if (this.current === "acquiring") this.why = describeError(error);
      else this.set("lost", describeError(error));
    }
  }

  /** From now on, take it again whenever it is not held (and, if asked, probe it while it is). */
  keepTrying(): void {
    this.retrying = true;
    this.schedule();
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
    await this.bounded(client.query("SELECT pg_advisory_unlock($1::bigint)", [this.spec.key])).catch(
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

  /** Try the lock, on the connection kept from a conflict or a new one; failures throw. */
  private async attempt(): Promise<void> {
    const client = this.client ?? (await this.connect());
    const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1::bigint) AS ok", [
      this.spec.key,
    ]);
    if (this.client !== client) throw new Error("released while being taken");
    if (rows[0]?.ok === true) {
      this.others = [];
      this.set("held", null);
      return;
    }
    const holders = await client.query<{ pid: number; addr: string | null; app: string | null }>(
      `SELECT h.pid, a.client_addr::text AS addr, a.application_name AS app FROM (${HELD_ADVISORY_KEYS}) h
         LEFT JOIN pg_stat_activity a ON a.pid = h.pid WHERE h.key = $1`,
      [this.spec.key],
    );
    this.others = holders.rows;
    // The connection is kept: the next attempt asks on it again, without a new session each time.
    this.set("conflict", this.spec.heldElsewhere(holders.rows));
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.settings.url,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      query_timeout: LOCK_QUERY_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5_000,
      application_name: this.spec.applicationName,
    });
    client.on("error", (error) => this.broken(client, describeError(error)));
    client.on("end", () => this.broken(client, "its connection to the database closed"));
    this.client = client;
    await client.connect();
    // The server's side of it: a holder cut off by the network (no FIN ever comes) is dropped,
    // and its lock with it, after about 25 s of silence, not the kernel's default two hours.
    await client.query(
      "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3",
    );
    return client;
  }

  /** The connection broke: a held lock is lost (said, and taken again); a kept one is dropped. */
  private broken(client: pg.Client, detail: string): void {
    if (this.client !== client) return;
    this.client = null;
    void this.bounded(client.end()).catch(() => undefined);
    if (this.current === "held") this.set("lost", `the lock's connection broke: ${detail}`);
    this.schedule();
  }

  private schedule(): void {
    if (!this.retrying || this.timer !== null || this.current === "released") return;
    if (this.current === "held" && this.spec.probeWhileHeld !== true) return;
    this.timer = this.settings.timers.set(() => {
      this.timer = null;
      const step = this.current === "held" ? this.probe() : this.take();
      void step.finally(() => this.schedule());
    }, this.settings.retryMs);
  }

  /** While held: one round trip on the lock's connection; a failure is a broken connection. */
  private async probe(): Promise<void> {
    const client = this.client;
    if (client === null || this.probing) return;
    this.probing = true;
    try {
      await client.query("SELECT 1");
    } catch (error) {
      this.broken(client, describeError(error));
    } finally {
      this.probing = false;
    }
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
