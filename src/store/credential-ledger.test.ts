import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { btreePages, checkpoint, fileDigest, overwritePages } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { CredentialLedger, MemoryCredentialLedger, readCredentialStates } from "./credential-ledger.js";
import { StoreCorruptError } from "./errors.js";
import { openStore, releaseStore } from "./registry.js";

const A = "aaaaaaaaaaaa";
const B = "bbbbbbbbbbbb";
const T0 = 1_700_000_000_000;

/** state.db as made by the store, then two more connections to it: two "processes". */
async function twoProcesses() {
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  await releaseStore(store);
  const open = () => {
    const db = new Database(paths.state);
    db.pragma("busy_timeout = 0");
    return db;
  };
  return { path: paths.state, one: open(), two: open() };
}

describe("CredentialLedger", () => {
  it("a 429 cooldown recorded by one process is skipped by the other until the reset", async () => {
    const { one, two } = await twoProcesses();
    const gateway = new CredentialLedger(one);
    const cron = new CredentialLedger(two);
    expect(await cron.usable("openai", [A, B], T0)).toEqual([A, B]);
    await gateway.record("openai", A, {
      status: "cooling",
      reason: "rate_limit",
      cooldown_until: T0 + 20_000,
      failures: "increment",
      now: T0,
    });
    expect(await cron.usable("openai", [A, B], T0 + 1)).toEqual([B]);
    expect(await cron.usable("openai", [A, B], T0 + 19_999)).toEqual([B]);
    expect(await cron.usable("openai", [A, B], T0 + 20_000)).toEqual([A, B]);
    // Another provider's pool is untouched.
    expect(await cron.usable("anthropic", [A], T0 + 1)).toEqual([A]);
    one.close();
    two.close();
  });

  it("counts failures from both processes and resets them on success", async () => {
    const { one, two } = await twoProcesses();
    const a = new CredentialLedger(one);
    const b = new CredentialLedger(two);
    const cooling = {
      status: "cooling",
      reason: "rate_limit",
      cooldown_until: T0 + 5,
      failures: "increment",
    } as const;
    await a.record("openai", A, { ...cooling, now: T0 });
    const second = await b.record("openai", A, { ...cooling, now: T0 + 1 });
    expect(second.failures).toBe(2);
    await a.record("openai", A, { status: "disabled", reason: "auth", failures: "increment", now: T0 + 2 });
    expect(await b.usable("openai", [A], T0 + 1_000_000)).toEqual([]);
    const ok = await b.record("openai", A, { status: "ok", failures: "reset", now: T0 + 3 });
    expect(ok).toEqual({
      provider: "openai",
      fingerprint: A,
      status: "ok",
      reason: null,
      cooldown_until: null,
      failures: 0,
      updated_at: T0 + 3,
    });
    one.close();
    two.close();
  });

  it("waits with jitter while another process holds the write lock", async () => {
    const { one, two } = await twoProcesses();
    one.exec("BEGIN IMMEDIATE");
    let sleeps = 0;
    const ledger = new CredentialLedger(two, {
      deps: {
        random: () => 0.5,
        sleep: async () => {
          sleeps++;
          if (sleeps === 2) one.exec("COMMIT");
        },
      },
    });
    const state = await ledger.record("openai", A, { status: "ok", now: T0 });
    expect(state.status).toBe("ok");
    expect(sleeps).toBe(2);
    one.close();
    two.close();
  });

  it("refuses anything that is not a fingerprint", async () => {
    const { one } = await twoProcesses();
    for (const ledger of [new CredentialLedger(one), new MemoryCredentialLedger()]) {
      await expect(ledger.record("openai", "sk-live-secret-key", { status: "ok", now: T0 })).rejects.toThrow(
        /fingerprints only/,
      );
    }
    expect(one.prepare("SELECT count(*) AS n FROM credential_state").get()).toEqual({ n: 0 });
    one.close();
  });

  it("the in-memory ledger behaves the same", async () => {
    const ledger = new MemoryCredentialLedger();
    await ledger.record("openai", A, {
      status: "cooling",
      cooldown_until: T0 + 10,
      failures: "increment",
      now: T0,
    });
    await ledger.record("openai", A, {
      status: "cooling",
      cooldown_until: T0 + 10,
      failures: "increment",
      now: T0,
    });
    expect(await ledger.usable("openai", [A, B], T0)).toEqual([B]);
    expect(await ledger.usable("openai", [A, B], T0 + 10)).toEqual([A, B]);
    expect((await ledger.get("openai"))[0]?.failures).toBe(2);
  });
});

describe("verdicts from several processes combine, keeping the stricter one", () => {
  async function ledgers(kind: "sqlite" | "memory") {
    if (kind === "memory") {
      const shared = new MemoryCredentialLedger();
      return { a: shared, b: shared, close: () => {} };
    }
    const { one, two } = await twoProcesses();
    return {
      a: new CredentialLedger(one),
      b: new CredentialLedger(two),
      close: () => {
        one.close();
        two.close();
      },
    };
  }

  it.each(["sqlite", "memory"] as const)(
    "%s: a shorter cooldown never shortens a longer one",
    async (kind) => {
      const { a, b, close } = await ledgers(kind);
      await a.record("openai", A, {
        status: "cooling",
        reason: "rate_limit",
        cooldown_until: T0 + 60_000,
        now: T0,
      });
      const after = await b.record("openai", A, {
        status: "cooling",
        reason: "rate_limit",
        cooldown_until: T0 + 5_000,
        now: T0 + 1,
      });
      expect(after.cooldown_until).toBe(T0 + 60_000);
      expect(await b.usable("openai", [A], T0 + 10_000)).toEqual([]);
      // A longer one does extend it.
      await b.record("openai", A, {
        status: "cooling",
        reason: "rate_limit",
        cooldown_until: T0 + 90_000,
        now: T0 + 2,
      });
      expect((await a.get("openai"))[0]?.cooldown_until).toBe(T0 + 90_000);
      close();
    },
  );

  it.each(["sqlite", "memory"] as const)(
    "%s: a late rate limit does not revive a disabled key",
    async (kind) => {
      const { a, b, close } = await ledgers(kind);
      await a.record("openai", A, { status: "disabled", reason: "auth", failures: "increment", now: T0 });
      const after = await b.record("openai", A, {
        status: "cooling",
        reason: "rate_limit",
        cooldown_until: T0 + 1_000,
        failures: "increment",
        now: T0 + 1,
      });
      expect(after).toMatchObject({ status: "disabled", reason: "auth", failures: 2 });
      expect(await a.usable("openai", [A], T0 + 1_000_000)).toEqual([]);
      close();
    },
  );

  it.each(["sqlite", "memory"] as const)(
    "%s: a success clears only verdicts not newer than the request that succeeded",
    async (kind) => {
      const { a, b, close } = await ledgers(kind);
      // b sent a request at T0; a saw the key limited at T0+5 while it was in flight; b's answer lands at T0+9.
      await a.record("openai", A, {
        status: "cooling",
        reason: "rate_limit",
        cooldown_until: T0 + 60_000,
        failures: "increment",
        now: T0 + 5,
      });
      const kept = await b.record("openai", A, {
        status: "ok",
        failures: "reset",
        now: T0 + 9,
        unless_changed_after: T0,
      });
      expect(kept).toMatchObject({ status: "cooling", cooldown_until: T0 + 60_000, failures: 1 });
      expect(await b.usable("openai", [A], T0 + 10)).toEqual([]);
      // A request sent after the verdict that then works does clear it.
      const cleared = await b.record("openai", A, {
        status: "ok",
        failures: "reset",
        now: T0 + 20,
        unless_changed_after: T0 + 6,
      });
      expect(cleared).toMatchObject({ status: "ok", failures: 0, cooldown_until: null });
      close();
    },
  );
});

describe("the store's ledger", () => {
  it("writes where other processes read it, and carries on in memory once the store is damaged", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const ledger = store.credentials();
    await ledger.record("openai", A, {
      status: "cooling",
      reason: "rate_limit",
      cooldown_until: T0 + 60_000,
      failures: "increment",
      now: T0,
    });
    const other = new Database(paths.state, { readonly: true });
    expect(readCredentialStates(other)).toEqual([
      expect.objectContaining({ provider: "openai", fingerprint: A, status: "cooling" }),
    ]);
    other.close();

    const id = await store.createSession();
    for (let i = 0; i < 200; i++)
      await store.appendMessage({ session_id: id, role: "user", content: `m ${i} ${"y".repeat(200)}` });
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "messages").map((p) => p.pageno),
      "garbage",
      11,
    );
    await expect(
      store.appendMessage({ session_id: id, role: "user", content: "after" }),
    ).rejects.toBeInstanceOf(StoreCorruptError);
    const before = fileDigest(paths.state);

    // Still a working ledger: what the store held is kept, and new verdicts count, in this process.
    await ledger.record("openai", B, {
      status: "disabled",
      reason: "auth",
      failures: "increment",
      now: T0 + 1,
    });
    expect(await ledger.usable("openai", [A, B], T0 + 2)).toEqual([]);
    expect(await ledger.usable("openai", [A, B], T0 + 60_000)).toEqual([A]);
    expect(store.health()).toMatchObject({ writable: false, credentials_local: true });
    expect(fileDigest(paths.state)).toBe(before);
    await releaseStore(store);
  });
});
