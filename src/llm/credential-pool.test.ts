import { existsSync, readFileSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { ConfigError } from "../core/errors.js";
import { CredentialLedger, MemoryCredentialLedger } from "../store/credential-ledger.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { ClassifiedError, ErrorReason } from "./classified-error.js";
import { CredentialPool, DEFAULT_POOL_TIMINGS } from "./credential-pool.js";
import { keyFingerprint } from "./key-fingerprint.js";

const KEY1 = "sk-test-first-key-0000000000000001";
const KEY2 = "sk-test-second-key-000000000000002";
const FP1 = keyFingerprint(KEY1);
const FP2 = keyFingerprint(KEY2);
const T0 = 1_700_000_000_000;
const HOUR = 60 * 60_000;

function failure(reason: ErrorReason, retry_after_ms: number | null = null): ClassifiedError {
  const keyFault = reason === "rate_limit" || reason === "auth" || reason === "billing";
  return {
    reason,
    retryable: reason === "rate_limit",
    rotate_credential: keyFault,
    fallback: false,
    compress: false,
    retry_after_ms,
    status: null,
    message: reason,
  };
}

describe("CredentialPool", () => {
  it("fingerprints are 12 hex digits and stable", () => {
    expect(FP1).toMatch(/^[0-9a-f]{12}$/);
    expect(keyFingerprint(KEY1)).toBe(FP1);
    expect(FP2).not.toBe(FP1);
  });

  it("a 401 on key 1 disables it until the key changes; next gives key 2", async () => {
    const ledger = new MemoryCredentialLedger();
    const pool = new CredentialPool("openai", [KEY1, KEY2], { ledger });
    expect(await pool.next(T0)).toEqual({ key: KEY1, fingerprint: FP1 });
    expect(await pool.report(FP1, failure("auth"), T0)).toBe("disabled");
    expect(await pool.next(T0)).toEqual({ key: KEY2, fingerprint: FP2 });
    expect(await pool.next(T0 + 1000 * HOUR)).toEqual({ key: KEY2, fingerprint: FP2 });
    // The operator replaces key 1: a new fingerprint, usable at once, first in order again.
    const replaced = new CredentialPool("openai", ["sk-test-replacement-key", KEY2], { ledger });
    expect((await replaced.next(T0))?.key).toBe("sk-test-replacement-key");
  });

  it("a rate-limited key cools until its reset, then comes back", async () => {
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    expect(await pool.report(FP1, failure("rate_limit", 20_000), T0)).toBe("cooled");
    expect((await pool.next(T0 + 19_999))?.fingerprint).toBe(FP2);
    expect((await pool.next(T0 + 20_000))?.fingerprint).toBe(FP1);
    expect((await pool.state(T0 + 1))[0]).toMatchObject({
      fingerprint: FP1,
      status: "cooling",
      reason: "rate_limit",
      cooldown_until: T0 + 20_000,
      failures: 1,
    });
    expect((await pool.state(T0 + 20_000))[0]).toMatchObject({ status: "ok", cooldown_until: null });
  });

  it("a first 429 without a delay retries the same key once; a success earns that back", async () => {
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    expect(await pool.report(FP1, failure("rate_limit"), T0)).toBe("retry_same_key");
    expect((await pool.next(T0))?.fingerprint).toBe(FP1);
    expect(await pool.report(FP1, failure("rate_limit"), T0)).toBe("cooled");
    expect((await pool.state(T0))[0]?.cooldown_until).toBe(T0 + DEFAULT_POOL_TIMINGS.rate_limit_cooldown_ms);
    expect((await pool.next(T0))?.fingerprint).toBe(FP2);
    await pool.reportSuccess(FP1, T0 + 1);
    expect((await pool.state(T0 + 1))[0]).toMatchObject({ status: "ok", failures: 0 });
    expect(await pool.report(FP1, failure("rate_limit"), T0 + 2)).toBe("retry_same_key");
  });

  it("a single-key pool gets short cooldowns instead of an hour's lock-out", async () => {
    const pool = new CredentialPool("openai", [KEY1]);
    await pool.report(FP1, failure("rate_limit", HOUR), T0);
    expect((await pool.state(T0))[0]?.cooldown_until).toBe(T0 + 30_000);
    expect(await pool.next(T0 + 29_999)).toBeNull();
    expect((await pool.next(T0 + 30_000))?.key).toBe(KEY1);
    await pool.report(FP1, failure("billing"), T0 + 30_000);
    expect((await pool.state(T0 + 30_000))[0]).toMatchObject({
      status: "cooling",
      reason: "billing",
      cooldown_until: T0 + 30_000 + 5 * 60_000,
    });
  });

  it("the last usable key of a larger pool gets the short cooldown too", async () => {
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    await pool.report(FP1, failure("auth"), T0);
    await pool.report(FP2, failure("rate_limit", HOUR), T0);
    expect((await pool.state(T0))[1]?.cooldown_until).toBe(T0 + 30_000);
  });

  it("billing cools a key for hours when another key is left", async () => {
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    expect(await pool.report(FP1, failure("billing"), T0)).toBe("cooled");
    expect((await pool.state(T0))[0]).toMatchObject({ reason: "billing", cooldown_until: T0 + 6 * HOUR });
    expect((await pool.next(T0 + 6 * HOUR - 1))?.fingerprint).toBe(FP2);
    expect((await pool.next(T0 + 6 * HOUR))?.fingerprint).toBe(FP1);
  });

  it("failures that are not the key's leave it alone", async () => {
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    expect(await pool.report(FP1, failure("overloaded"), T0)).toBe("unchanged");
    expect(await pool.report(FP1, failure("context_overflow"), T0)).toBe("unchanged");
    expect((await pool.next(T0))?.fingerprint).toBe(FP1);
  });

  it("refuses an empty key list at construction", () => {
    expect(() => new CredentialPool("openai", [])).toThrow(ConfigError);
    expect(() => new CredentialPool("openai", [""])).toThrow(ConfigError);
  });

  it("shares state through state.db and never stores or shows a secret", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await releaseStore(store);
    const one = new Database(paths.state);
    const two = new Database(paths.state);
    const gateway = new CredentialPool("openai", [KEY1, KEY2], { ledger: new CredentialLedger(one) });
    const cli = new CredentialPool("openai", [KEY1, KEY2], { ledger: new CredentialLedger(two) });
    await gateway.report(FP1, failure("rate_limit", 15_000), T0);
    await gateway.report(FP2, failure("auth"), T0);
    expect(await cli.next(T0 + 1)).toBeNull();
    expect((await cli.next(T0 + 15_000))?.key).toBe(KEY1);

    const shown = JSON.stringify(await cli.state(T0));
    const rows = JSON.stringify(two.prepare("SELECT * FROM credential_state").all());
    two.close();
    one.close();
    // Every byte of the file too, WAL included, in case a key slipped into some other column.
    const files = [paths.state, `${paths.state}-wal`]
      .filter(existsSync)
      .map((f) => readFileSync(f).toString("latin1"));
    for (const text of [shown, rows, ...files]) {
      for (const secret of [KEY1, KEY2, "sk-test"]) expect(text).not.toContain(secret);
    }
    expect(rows).toContain(FP1);
    expect(shown).toContain(FP2);
  });
});

/** A ledger that counts its reads and writes. */
class CountingLedger extends MemoryCredentialLedger {
  reads = 0;
  writes = 0;
  override async get(provider: string) {
    this.reads++;
    return await super.get(provider);
  }
  override async record(...args: Parameters<MemoryCredentialLedger["record"]>) {
    this.writes++;
    return super.record(...args);
  }
}

describe("CredentialPool.reportSuccess after a pick", () => {
  it("costs no read and no write for a key that was clean when picked", async () => {
    const ledger = new CountingLedger();
    const pool = new CredentialPool("openai", [KEY1, KEY2], { ledger });
    const picked = await pool.pick(T0);
    expect(picked).toMatchObject({ key: KEY1, fingerprint: FP1, clean: true });
    await pool.reportSuccess(picked ?? FP1, T0 + 5, T0);
    expect([ledger.reads, ledger.writes]).toEqual([1, 0]);
  });

  it("still clears a key that had failures when it was picked", async () => {
    const ledger = new CountingLedger();
    const pool = new CredentialPool("openai", [KEY1], { ledger });
    await pool.report(FP1, failure("rate_limit", 1_000), T0);
    const picked = await pool.pick(T0 + 1_000);
    expect(picked).toMatchObject({ fingerprint: FP1, clean: false });
    await pool.reportSuccess(picked ?? FP1, T0 + 1_010, T0 + 1_000);
    expect((await pool.state(T0 + 1_010))[0]).toMatchObject({ status: "ok", failures: 0 });
  });

  it("still clears what this pool recorded after the pick and before the request went out", async () => {
    // Two calls on one key: the first fails and cools the key after the second picked it clean.
    const pool = new CredentialPool("openai", [KEY1, KEY2]);
    const second = await pool.pick(T0);
    expect(second?.clean).toBe(true);
    await pool.report(FP1, failure("rate_limit", 20_000), T0 + 1);
    await pool.reportSuccess(second ?? FP1, T0 + 9, T0 + 2);
    expect((await pool.state(T0 + 9))[0]).toMatchObject({ status: "ok", failures: 0 });
    // Recorded after the request went out, the same verdict is newer than the success and stands.
    const third = await pool.pick(T0 + 10);
    await pool.report(FP1, failure("rate_limit", 20_000), T0 + 12);
    await pool.reportSuccess(third ?? FP1, T0 + 19, T0 + 11);
    expect((await pool.state(T0 + 19))[0]).toMatchObject({ status: "cooling", cooldown_until: T0 + 20_012 });
  });

  it("keeps a verdict another process recorded during the call, through state.db", async () => {
    const paths = tempProfile();
    await releaseStore(await openStore(paths, { integrityCheckTimeoutMs: 0 }));
    const one = new Database(paths.state);
    const two = new Database(paths.state);
    try {
      const gateway = new CredentialPool("openai", [KEY1, KEY2], { ledger: new CredentialLedger(one) });
      const cli = new CredentialPool("openai", [KEY1, KEY2], { ledger: new CredentialLedger(two) });
      const picked = await gateway.pick(T0);
      expect(picked?.clean).toBe(true);
      // The gateway's request went out at T0; the CLI saw key 1 limited at T0+5; the answer lands at T0+9.
      await cli.report(FP1, failure("rate_limit", 20_000), T0 + 5);
      await gateway.reportSuccess(picked ?? FP1, T0 + 9, T0);
      expect((await cli.state(T0 + 9))[0]).toMatchObject({ status: "cooling", cooldown_until: T0 + 20_005 });
      expect((await gateway.next(T0 + 9))?.fingerprint).toBe(FP2);
    } finally {
      two.close();
      one.close();
    }
  });
});
