// A provider configured without api_keys, through the runtime built from config: a 401 is
// `key_required` (nothing disabled, no rotation, no retry), the next call reaches the server again,
// a fallback answers in its place, and a ledger row that disabled its pseudo-key (an older Tenax
// wrote it) locks nothing out and is cleared by the next success. A rate limit still cools it.
import { describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { configSchema } from "../config/schema.js";
import { MemoryCredentialLedger } from "../store/credential-ledger.js";
import { ProviderError } from "./classified-error.js";
import { CredentialPool, NO_KEY } from "./credential-pool.js";
import { keyFingerprint } from "./key-fingerprint.js";
import type { RouteEvent } from "./route-events.js";
import { createModelRuntime } from "./runtime.js";

const hello = { messages: [{ role: "user" as const, content: "ping" }] };
const refused = {
  type: "error" as const,
  status: 401,
  body: { error: { message: "Unauthorized", type: "invalid_request_error" } },
};

function keylessConfig(extra: Record<string, unknown> = {}) {
  return configSchema.parse({
    model: { provider: "local", name: "echo" },
    providers: { local: { type: "simulator", script: [refused] } },
    retry: { max_attempts: 3 },
    ...extra,
  });
}

describe("a keyless provider", () => {
  it("a 401 is key_required naming the server and config key, with nothing disabled; the next call reaches the server", async () => {
    const ledger = new MemoryCredentialLedger();
    const rt = await createModelRuntime(keylessConfig(), { ledger, deps: fakeDeps() });
    try {
      const sim = rt.simulators.get("local");
      const events: RouteEvent[] = [];
      const error = await rt.router
        .turn()
        .complete(hello, { onEvent: (e) => events.push(e) })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(ProviderError.isInstance(error)).toBe(true);
      const failure = error as ProviderError;
      expect(failure.classified).toMatchObject({
        reason: "key_required",
        status: 401,
        retryable: false,
        rotate_credential: false,
        fallback: true,
      });
      expect(failure.classified.message).toBe(
        `the server at ${sim?.url} wants a key (it said: Unauthorized): add api_keys under providers.local in config.yaml`,
      );
      expect(failure.data.layer).toBe("credentials");
      // Neither a rotation nor a retry: the same keyless call would be refused the same way.
      expect(events.filter((e) => "layer" in e)).toEqual([]);
      expect(sim?.requests().map((r) => r.status)).toEqual([401]);
      expect(await ledger.get("local")).toEqual([]);

      const done = await rt.router.turn().complete(hello);
      expect(done.text).toContain("ping");
      expect(sim?.requests().map((r) => r.status)).toEqual([401, 200]);
    } finally {
      await rt.close();
    }
  });

  it("falls back like any provider that cannot answer", async () => {
    const config = keylessConfig({
      providers: {
        local: { type: "simulator", script: [refused] },
        backup: { type: "simulator" },
      },
      fallback: [{ provider: "backup", name: "echo" }],
    });
    const rt = await createModelRuntime(config, { deps: fakeDeps() });
    try {
      const events: RouteEvent[] = [];
      const done = await rt.router.turn().complete(hello, { onEvent: (e) => events.push(e) });
      expect(done.provider).toBe("backup");
      expect(events.find((e) => e.type === "fallback")).toMatchObject({ reason: "key_required" });
    } finally {
      await rt.close();
    }
  });

  it("an old ledger row that disabled the pseudo-key locks nothing out, and the next success clears it", async () => {
    const ledger = new MemoryCredentialLedger([
      {
        provider: "local",
        fingerprint: keyFingerprint(NO_KEY),
        status: "disabled",
        reason: "auth",
        cooldown_until: null,
        failures: 3,
        updated_at: 1,
      },
    ]);
    const config = configSchema.parse({
      model: { provider: "local", name: "echo" },
      providers: { local: { type: "simulator" } },
    });
    const rt = await createModelRuntime(config, { ledger, deps: fakeDeps() });
    try {
      expect((await rt.router.turn().complete(hello)).text).toContain("ping");
      expect(await ledger.get("local")).toMatchObject([{ status: "ok", failures: 0 }]);
    } finally {
      await rt.close();
    }
  });

  it("a keyless pool is one pseudo-key that a rate limit cools and a refusal never disables", async () => {
    const ledger = new MemoryCredentialLedger();
    const pool = new CredentialPool("local", null, { ledger });
    expect(pool.keyed).toBe(false);
    expect(pool.size).toBe(1);
    const picked = await pool.pick(0);
    expect(picked).toMatchObject({ key: NO_KEY, fingerprint: keyFingerprint(NO_KEY) });
    const fp = picked?.fingerprint ?? "";
    const refusal = classifiedFailure("auth", { status: 401 });
    expect(await pool.report(fp, refusal, 0)).toBe("key_required");
    expect(await pool.report(fp, { ...refusal, reason: "auth_permanent" }, 0)).toBe("key_required");
    expect(await ledger.get("local")).toEqual([]);
    expect(await pool.state(0)).toMatchObject([{ status: "ok" }]);
    // A rate limit is the server's, not a key's: it cools the pseudo-key as before, for every process.
    const limited = classifiedFailure("rate_limit", { status: 429, retry_after_ms: 5_000 });
    expect(await pool.report(fp, limited, 0)).toBe("cooled");
    expect(await pool.pick(1)).toBeNull();
    expect(await pool.state(1)).toMatchObject([{ status: "cooling", reason: "rate_limit" }]);
    expect(await pool.pick(30_001)).not.toBeNull();
  });
});
