// The transaction runner on a scripted pool: which failures run a transaction again (deadlock and
// serialization victims, after a backoff; a dead pooled connection, once and at once), and which
// are final (anything else; a connection lost during COMMIT, whose outcome is unknown).
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { CommitOutcomeUnknown, inTransaction, retryDelay } from "./pg-transaction.js";

type Script = (sql: string, attempt: number) => void;

function scriptedPool(script: Script) {
  const log: string[] = [];
  const released: unknown[] = [];
  let attempt = 0;
  const pool = {
    async connect() {
      attempt++;
      const n = attempt;
      return {
        async query(sql: string) {
          log.push(`${n}:${sql}`);
          script(sql, n);
          return { rows: [], rowCount: 0 };
        },
        release(error?: unknown) {
          released.push(error ?? null);
        },
      };
    },
  } as unknown as pg.Pool;
  return { pool, log, released };
}

const failure = (code: string) => Object.assign(new Error(`failed with ${code}`), { code });

describe("inTransaction", () => {
  const slept: number[] = [];
  const deps = { sleep: async (ms: number) => void slept.push(ms), random: () => 0.5 };

  it("runs a deadlock or serialization victim again after a jittered backoff", async () => {
    slept.length = 0;
    const { pool, log } = scriptedPool((sql, n) => {
      if (sql === "WORK" && n === 1) throw failure("40P01");
      if (sql === "WORK" && n === 2) throw failure("40001");
    });
    const work = async (c: pg.PoolClient) => {
      await c.query("WORK");
      return "done";
    };
    const value = await inTransaction(pool, work, { deps });
    expect(value).toBe("done");
    expect(log).toEqual([
      "1:BEGIN",
      "1:WORK",
      "1:ROLLBACK",
      "2:BEGIN",
      "2:WORK",
      "2:ROLLBACK",
      "3:BEGIN",
      "3:WORK",
      "3:COMMIT",
    ]);
    expect(slept).toEqual([retryDelay(1, () => 0.5), retryDelay(2, () => 0.5)]);
  });

  it("gives up after the attempts allowed", async () => {
    const { pool, log } = scriptedPool((sql) => {
      if (sql === "WORK") throw failure("40001");
    });
    await expect(inTransaction(pool, (c) => c.query("WORK"), { deps, maxAttempts: 3 })).rejects.toMatchObject(
      {
        code: "40001",
      },
    );
    expect(log.filter((l) => l.endsWith("WORK"))).toHaveLength(3);
  });

  it("never runs again a transaction refused for anything else", async () => {
    const { pool, log } = scriptedPool((sql) => {
      if (sql === "WORK") throw failure("23505");
    });
    await expect(inTransaction(pool, (c) => c.query("WORK"), { deps })).rejects.toMatchObject({
      code: "23505",
    });
    expect(log).toEqual(["1:BEGIN", "1:WORK", "1:ROLLBACK"]);
  });

  it("replaces a dead pooled connection once, then reports the database unreachable", async () => {
    const { pool, released } = scriptedPool((sql) => {
      if (sql === "BEGIN") throw failure("ECONNRESET");
    });
    await expect(inTransaction(pool, (c) => c.query("WORK"), { deps })).rejects.toMatchObject({
      code: "ECONNRESET",
    });
    // Both connections were handed back broken, so the pool destroys them.
    expect(released).toHaveLength(2);
    expect(released.every((e) => e instanceof Error)).toBe(true);
  });

  it("says the outcome is unknown when the connection is lost during COMMIT", async () => {
    const { pool, log } = scriptedPool((sql) => {
      if (sql === "COMMIT") throw new Error("Connection terminated unexpectedly");
    });
    const error = await inTransaction(pool, (c) => c.query("WORK"), { deps }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommitOutcomeUnknown);
    expect(log).toEqual(["1:BEGIN", "1:WORK", "1:COMMIT"]);
  });
});

describe("retryDelay", () => {
  it("doubles from 10 ms to at most 500 ms, half of it random", () => {
    expect(retryDelay(1, () => 0)).toBe(10);
    expect(retryDelay(1, () => 1)).toBe(20);
    expect(retryDelay(10, () => 0)).toBe(250);
    expect(retryDelay(10, () => 1)).toBe(500);
  });
});
