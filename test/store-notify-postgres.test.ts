// Wake-ups between processes of a shared PostgreSQL store: a notification sent through one store's
// pool is heard by another store's listener (its own connection), and still after the database
// restarts under it (the listener makes its connection again). A wake-up is a hint: what matters
// is that it arrives, not what it carries.
import { describe, expect, it } from "vitest";
import { usePostgresCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";

const cluster = usePostgresCluster();

async function heard(received: string[], payload: string, ms = 10_000): Promise<number> {
  const started = Date.now();
  while (!received.includes(payload)) {
    if (Date.now() - started > ms) throw new Error(`${payload} was not heard within ${ms} ms: ${received}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
}

describe("wake-ups on a shared PostgreSQL store", () => {
  it("one store's notification wakes another's listener, also after a database restart", async () => {
    const url = await cluster().createDatabase();
    const sender = (await openPostgresAt(url)).store;
    const hearer = (await openPostgresAt(url)).store;
    const received: string[] = [];
    const stop = hearer.listen("tenax_test_wake", (payload) => received.push(payload));
    // The listener connects in the background: notify until the first is heard.
    for (let i = 0; !received.includes("first"); i++) {
      await sender.notify("tenax_test_wake", "first");
      await new Promise((r) => setTimeout(r, 50));
      if (i > 200) throw new Error("the first wake-up was never heard");
    }
    await sender.notify("tenax_test_wake", "second");
    expect(await heard(received, "second")).toBeLessThan(2_000);
    await cluster().restart();
    // After the restart: sent until heard (the listener reconnects within a second or so).
    const deadline = Date.now() + 20_000;
    while (!received.includes("after")) {
      if (Date.now() > deadline) throw new Error(`no wake-up heard after the restart: ${received}`);
      await sender.notify("tenax_test_wake", "after").catch(() => {});
      await new Promise((r) => setTimeout(r, 200));
    }
    stop();
    await sender.notify("tenax_test_wake", "unheard");
    await new Promise((r) => setTimeout(r, 300));
    expect(received).not.toContain("unheard");
    await sender.shutdown();
    await hearer.shutdown();
  }, 60_000);
});
