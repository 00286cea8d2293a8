// The store's two voices agree, against a real `tenax gateway run`: when the gateway's own health
// checks (SQLite's page check, the read-only look at the layers) find damage in state.db that no
// write touches, /health says the store is down and from then on no turn is acknowledged: the
// writer stops at once, as if a write had met the damage.
import { beforeAll, describe, expect, it } from "vitest";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { btreePages, checkpoint, copyPage, overwritePages } from "./helpers/corrupt.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const chat = (gw: GatewayProcess, content: string) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });

async function storeStatus(gw: GatewayProcess): Promise<string | undefined> {
  const health = (await (await gw.fetch("/health")).json()) as {
    components: Record<string, { status: string }>;
  };
  return health.components.store?.status;
}

describe("the store's health and its writer", () => {
  it("once /health finds damage no write touches, no further turn is acknowledged", async () => {
    const paths = profileWith("health: { probe_interval: 0.5, integrity_interval: 1 }\n");
    // Old sessions, whose pages later turns never touch (new rows go to the right of each b-tree).
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    for (let i = 0; i < 300; i++) {
      const id = await store.createSession({ title: `old session ${i} ${"t".repeat(100)}` });
      await store.appendMessage({ session_id: id, role: "user", content: `old message ${i}` });
    }
    await releaseStore(store);
    checkpoint(paths.state);
    const gw = await startGateway(paths.home);
    expect((await chat(gw, "before the damage")).status).toBe(200);

    const leaves = btreePages(paths.state, "sessions").filter((p) => p.pagetype === "leaf");
    expect(leaves.length).toBeGreaterThan(3);
    overwritePages(paths.state, [leaves[0]?.pageno as number], "garbage", 11);

    // Turns go on while the checks run; count what is acknowledged after /health says down.
    let downSeen = false;
    let acknowledgedAfterDown = 0;
    let refusedAfterDown = 0;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && refusedAfterDown < 10) {
      const wasDown = downSeen || (await storeStatus(gw)) === "down";
      const response = await chat(gw, "while the checks run");
      await response.arrayBuffer();
      if (!wasDown) continue;
      downSeen = true;
      if (response.status === 200) acknowledgedAfterDown++;
      else {
        expect(response.status).toBe(503);
        refusedAfterDown++;
      }
    }
    expect(downSeen).toBe(true);
    expect(acknowledgedAfterDown).toBe(0);
    expect(refusedAfterDown).toBe(10);
    const refused = await chat(gw, "after");
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("store_unavailable");
    expect(body.error.message).toContain(`tenax sessions recover --source ${paths.state}`);
  }, 60_000);

  it("damage that keeps the health check's reader from even opening the store stops the writer too", async () => {
    // No page check: only the layer probe's read-only look, which opens the store each time.
    const paths = profileWith("health: { probe_interval: 0.5, integrity_interval: 0 }\n");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.createSession({ title: "one" });
    await releaseStore(store);
    checkpoint(paths.state);
    const gw = await startGateway(paths.home);
    expect((await chat(gw, "before the damage")).status).toBe(200);
    // The meta table is read when a store is opened, and never written after.
    overwritePages(
      paths.state,
      btreePages(paths.state, "meta").map((p) => p.pageno),
      "garbage",
      13,
    );
    await expect.poll(() => storeStatus(gw), { timeout: 20_000 }).toBe("down");
    const refused = await chat(gw, "after the damage");
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("store_unavailable");
  }, 60_000);

  it("`tenax status` says the store is down when the gateway's page check found damage no read of its own meets", async () => {
    // A pass every 2 s, or as often as the checks' 1% of a core allows (a few seconds here).
    const paths = profileWith("health: { probe_interval: 0.5, integrity_interval: 2 }\n");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    for (let i = 0; i < 40; i++) {
      const id = await store.createSession({ title: `old session ${i}` });
      await store.appendMessages(
        Array.from({ length: 20 }, (_, m) => ({
          session_id: id,
          role: "user",
          content: `old ${m} ${"w".repeat(300)}`,
        })),
      );
    }
    await releaseStore(store);
    checkpoint(paths.state);
    const gw = await startGateway(paths.home);
    // A well-formed leaf in another leaf's place: every read still works, here and in the gateway.
    const leaves = btreePages(paths.state, "messages").filter((p) => p.pagetype === "leaf");
    expect(leaves.length).toBeGreaterThan(10);
    copyPage(paths.state, leaves[8]?.pageno as number, leaves[3]?.pageno as number);
    await expect.poll(() => storeStatus(gw), { timeout: 60_000 }).toBe("down");

    const run = await tenaxAsync(paths.home, ["status", "--json"]);
    const report = JSON.parse(run.stdout) as {
      status: string;
      components: { store: { status: string; detail: string; next: string | null; messages: number } };
    };
    expect(report.components.store).toMatchObject({
      status: "down",
      next: `tenax sessions recover --source ${paths.state} --inspect-only`,
    });
    // One voice: status tells the store as the gateway's writer found it, word for word.
    expect(report.components.store.detail).toMatch(/^SQLite's page check found damage/);
    const health = (await (await gw.fetch("/health")).json()) as {
      components: Record<string, { detail: string }>;
    };
    expect(report.components.store.detail).toBe(health.components.store?.detail);
    expect(report.status).toBe("down");
    expect(run.status).toBe(2);
  }, 120_000);
});
