// Several gateways from one home: on a store they share (PostgreSQL) each holds its own pid file
// (gateway.pid, then gateway.2.pid, ...), both serve, and a session still runs one turn at a time
// across them (the second message waits for the first's turn, then runs); a gateway started after
// the first was killed takes its pid file back. On SQLite the second is refused, saying what would
// allow it.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readGatewayPid } from "../src/profile/gateway-pid.js";
import { openProfileReader, type ProfileReader } from "../src/store/registry.js";
import { requireBuild } from "./helpers/cli.js";
import { refusedGateway, simProfile, startGateway } from "./helpers/gateway.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { sharedProfiles } from "./helpers/shared-gateways.js";
import { chatTurn } from "./helpers/torture.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();
const readers: ProfileReader[] = [];
afterEach(() => {
  for (const r of readers.splice(0)) r.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("several gateways from one home", () => {
  it("on PostgreSQL: each its own pid file, both serve, a session's turns one after another across them", async () => {
    const url = await cluster().createDatabase();
    const { sim, homes, paths } = await sharedProfiles(1, url);
    const home = homes[0] ?? "";
    const pidFile = paths[0]?.pid ?? "";
    const a = await startGateway(home);
    const b = await startGateway(home);
    expect(b.stdout()).toContain(`this one holds ${pidFile.replace(/gateway\.pid$/, "gateway.2.pid")}`);
    // Local commands (tenax status, the URL tenax chat finds) read the first gateway's file.
    expect(readGatewayPid(pidFile).pid).toBe(a.child.pid);

    const first = await chatTurn(a, "hello", null);
    expect(first.status).toBe(200);
    const sid = first.sessionId ?? "";
    // The next reply takes about a second; a message for the same session on the other gateway
    // arrives meanwhile: it waits for that turn (its start is refused while it runs), then runs.
    sim.script([
      { type: "reply", text: "a slow answer, one chunk at a time", chunk_size: 2, chunk_delay_ms: 60 },
    ]);
    const [slow, waited] = await Promise.all([
      chatTurn(a, "one", sid),
      sleep(300).then(() => chatTurn(b, "two", sid)),
    ]);
    expect([slow.status, waited.status, waited.code]).toEqual([200, 200, null]);
    expect(slow.reply).toBe("a slow answer, one chunk at a time");
    const reader = (await openProfileReader(paths[0] as never, { engine: "postgres", url })) as ProfileReader;
    readers.push(reader);
    const turns = await reader.getTurns(sid);
    expect(turns.map((t) => t.status)).toEqual(["completed", "completed", "completed"]);
    for (let i = 1; i < turns.length; i++)
      expect(turns[i]?.started_at ?? 0, `turn ${i} starts after turn ${i - 1} ended`).toBeGreaterThanOrEqual(
        turns[i - 1]?.ended_at ?? Number.POSITIVE_INFINITY,
      );
    expect((await reader.getMessages(sid)).filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "hello",
      "one",
      "two",
    ]);

    // The first gateway dies: the next start from this home takes its pid file back; both serve.
    a.child.kill("SIGKILL");
    await a.exited;
    const c = await startGateway(home);
    expect(c.stderr() + c.stdout()).toContain(`reclaimed the pid file of gateway pid ${a.child.pid}`);
    expect(readGatewayPid(pidFile).pid).toBe(c.child.pid);
    expect((await chatTurn(c, "three", sid)).status).toBe(200);
    expect((await chatTurn(b, "four", sid)).status).toBe(200);
  });

  it("on SQLite: a second gateway of one home is refused, naming the first and what allows several", async () => {
    const { home } = await simProfile();
    const first = await startGateway(home);
    const refused = await refusedGateway(home);
    expect(refused.status).not.toBe(0);
    const said = refused.output;
    expect(said).toContain(`already running (pid ${first.child.pid}`);
    expect(said).toContain("store.engine: postgres");
    expect((await chatTurn(first, "still here", null)).status).toBe(200);
  });
});
