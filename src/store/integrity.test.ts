import { describe, expect, it } from "vitest";
import { btreePages, checkpoint, overwritePages } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { StoreCorruptError } from "./errors.js";
import { checkIntegrity, type IntegrityResult } from "./integrity.js";
import { openStore, releaseStore } from "./registry.js";

async function storeWithMessages(count: number) {
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const session = await store.createSession();
  await store.appendMessages(
    Array.from({ length: count }, (_, i) => ({
      session_id: session,
      role: "user",
      content: `m${i} ${"y".repeat(200)}`,
    })),
  );
  return { paths, store, session };
}

describe("the integrity check", () => {
  it("answers within its budget and delivers the late result afterwards", async () => {
    const { paths, store } = await storeWithMessages(2000);
    await releaseStore(store);
    const late = new Promise<IntegrityResult>((resolve) => {
      void checkIntegrity(paths.state, { timeoutMs: 1, onLate: resolve }).then((first) => {
        expect(first.status).toBe("unknown");
        expect(first.detail[0]).toMatch(/did not finish within 1 ms/);
      });
    });
    await expect(late).resolves.toMatchObject({ status: "ok", detail: ["ok"] });
  });

  it("finds damage on open and makes the store refuse writes into the spool", async () => {
    const { paths, store, session } = await storeWithMessages(500);
    await releaseStore(store);
    checkpoint(paths.state);
    // Damage old rows that no append would touch: only the page check can find them.
    const leaves = btreePages(paths.state, "messages").filter((p) => p.pagetype === "leaf");
    overwritePages(
      paths.state,
      leaves.slice(1, 3).map((p) => p.pageno),
      "garbage",
      3,
    );
    const reopened = await openStore(paths, { integrityCheckTimeoutMs: 30_000 });
    const health = reopened.health();
    expect(health.integrity?.status).toBe("corrupt");
    expect(health.corrupt?.recover).toBe(`tenax sessions recover --source ${paths.state} --inspect-only`);
    await expect(
      reopened.appendMessage({ session_id: session, role: "user", content: "late" }),
    ).rejects.toBeInstanceOf(StoreCorruptError);
    await releaseStore(reopened);
  });

  it("reports a healthy store as ok on demand, with the full check", async () => {
    const { store } = await storeWithMessages(100);
    const result = await store.checkIntegrity("full");
    expect(result).toMatchObject({ status: "ok", mode: "full" });
    // The CPU its thread used (Linux tells it): what the verifier paces itself by.
    expect(result.cpu_ms).toBeGreaterThanOrEqual(0);
    expect(result.cpu_ms).toBeLessThanOrEqual(result.duration_ms + 20);
    expect(store.health().integrity).toBe(result);
    await releaseStore(store);
  });
});
