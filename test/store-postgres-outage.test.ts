// PostgreSQL stopped under load, as an operator's restart or a failover does it: clients keep
// sending chat turns to a real gateway while the database goes away and comes back. While it is
// away every answer is a 503 `store_unavailable` with Retry-After, never a 200 that was not stored,
// and /health is down naming the store by its URL without the password; once it is back turns
// succeed again within seconds, with no restart of Tenax, in the same sessions; every acknowledged
// turn is stored once, and no turn is left running.
import { appendFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { openProfileReader, type ProfileReader } from "../src/store/registry.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { type ChatAnswer, chatTurn, expectConsistent, isFinalReply } from "./helpers/torture.js";

const cluster = usePostgresCluster();
const CLIENTS = 4;
const PASSWORD = "outage-secret-pw";

interface Sent {
  client: number;
  text: string;
  at: number;
  answer: ChatAnswer;
  retryAfter: string | null;
}

/** Which phase a turn was sent in: "starting" while the database is being started again. */
type Phase = "before" | "down" | "starting" | "after";

async function client(
  gw: GatewayProcess,
  c: number,
  state: { phase: Phase; live: boolean },
  sent: Map<Phase, Sent[]>,
): Promise<void> {
  let session: string | null = null;
  for (let n = 0; state.live; n++) {
    const text = `c${c} m${n}`;
    const phase = state.phase;
    const started = Date.now();
    let retryAfter: string | null = null;
    let answer: ChatAnswer;
    try {
      answer = await chatTurn(
        {
          fetch: async (path, init) => {
            const response = await gw.fetch(path, init);
            retryAfter = response.headers.get("retry-after");
            return response;
          },
        },
        text,
        session,
      );
    } catch (error) {
      throw new Error(
        `${text}: the gateway did not answer (exit ${gw.child.exitCode}); its stderr: ${gw.stderr().slice(-3000)}`,
        { cause: error },
      );
    }
    session = answer.sessionId ?? session;
    sent.get(phase)?.push({ client: c, text, at: started, answer, retryAfter });
    if (answer.status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
}

describe("PostgreSQL stopped under load", () => {
  it("refuses turns with 503 and Retry-After while it is down, says so in /health, and heals by itself", async () => {
    requireBuild();
    const { home, paths } = await simProfile();
    const bare = await cluster().createDatabase();
    // The cluster trusts local users and ignores the password: it is here to be kept out of sight.
    const url = bare.replace("://tenax@", `://tenax:${PASSWORD}@`);
    appendFileSync(
      paths.config,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config names the variable, as users write it
      'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }\nagent: { lease_seconds: 5 }\n',
    );
    writeFileSync(paths.env, `TENAX_DATABASE_URL=${url}\n`, { mode: 0o600 });
    const gw = await startGateway(home);
    const state: { phase: Phase; live: boolean } = { phase: "before", live: true };
    const sent = new Map<Phase, Sent[]>([
      ["before", []],
      ["down", []],
      ["starting", []],
      ["after", []],
    ]);
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(gw, c, state, sent));
    try {
      await new Promise((r) => setTimeout(r, 1_500));
      await cluster().stop();
      state.phase = "down";
      await new Promise((r) => setTimeout(r, 1_500));

      const health = await gw.fetch("/health");
      const body = await health.text();
      expect(health.status, body).toBe(503);
      const store = (JSON.parse(body) as { components: { store: { status: string; detail: string } } })
        .components.store;
      expect(store.status).toBe("down");
      expect(store.detail).toContain(bare.replace("postgres://", "").split("/")[0]);
      expect(body).not.toContain(PASSWORD);

      state.phase = "starting";
      await cluster().start();
      const back = Date.now();
      state.phase = "after";
      // Healed: every client has had a 200 since the database came back.
      const deadline = back + 15_000;
      while (Date.now() < deadline) {
        const healed = new Set(
          (sent.get("after") ?? []).filter((s) => s.answer.status === 200).map((s) => s.client),
        );
        if (healed.size === CLIENTS) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const firstOk = (sent.get("after") ?? []).find((s) => s.answer.status === 200);
      console.log(
        `postgres outage: ${sent.get("before")?.length} turns before, ${sent.get("down")?.length} while down, first 200 ${firstOk ? firstOk.at - back : "never"} ms after the start`,
      );
      await new Promise((r) => setTimeout(r, 1_000));
    } finally {
      state.live = false;
      await Promise.all(clients);
    }

    const all = [...sent.values()].flat();
    const before = sent.get("before") ?? [];
    const down = sent.get("down") ?? [];
    const after = sent.get("after") ?? [];
    expect(before.filter((s) => s.answer.status === 200).length).toBeGreaterThan(CLIENTS);
    // Down: refused with the store's layer and a short wait, never a 200.
    expect(down.length).toBeGreaterThan(0);
    for (const s of down) {
      expect(s.answer.status, `${s.text}: ${s.answer.reply}`).toBe(503);
      expect(s.answer.code, s.text).toBe("store_unavailable");
      expect(s.retryAfter, s.text).toMatch(/^[12]$/);
      expect(s.answer.reply).not.toContain(PASSWORD);
    }
    // Every client took turns again after the return, in its own session.
    const healed = new Set(after.filter((s) => s.answer.status === 200).map((s) => s.client));
    expect([...healed].sort()).toEqual([0, 1, 2, 3]);
    // Whatever was answered across the edges was a 200 or the store's 503, nothing else.
    for (const s of all)
      expect([200, 503], `${s.text}: ${s.answer.status} ${s.answer.reply}`).toContain(s.answer.status);

    // A turn whose last write the database refused is still "running" in the store: the watchdog
    // finds it (its lease is not renewed) and settles it, so no session is left stuck.
    const reader = (await openProfileReader(paths, { engine: "postgres", url })) as ProfileReader;
    try {
      const settleBy = Date.now() + 30_000;
      const stuck = (await reader.runningTurns()).length;
      while ((await reader.runningTurns()).length > 0 && Date.now() < settleBy)
        await new Promise((r) => setTimeout(r, 250));
      console.log(`postgres outage: ${stuck} turns left running by refused writes, settled by the watchdog`);
      gw.child.kill("SIGTERM");
      expect(await gw.exited).toBe(0);
      // Every acknowledged turn is stored once with its reply; no turn is left running.
      await expectConsistent(reader);
      for (const s of all.filter((x) => x.answer.status === 200)) {
        const messages = await reader.getMessages(s.answer.sessionId ?? "");
        const question = messages.filter((m) => m.role === "user" && m.content === s.text);
        expect(question, `${s.text} is stored once`).toHaveLength(1);
        const reply = messages.filter((m) => m.turn_id === question[0]?.turn_id && isFinalReply(m));
        expect(reply.map((m) => m.content)).toEqual([s.answer.reply]);
      }

      // The writes the database refused wait in the spool; the replay folds them in, once.
      const dry = await tenaxAsync(home, ["store", "replay", "--dry-run", "--json"]);
      const waiting = (JSON.parse(dry.stdout) as { records: number }).records;
      expect(waiting, dry.stderr).toBeGreaterThan(0);
      const status = JSON.parse((await tenaxAsync(home, ["status", "--json"])).stdout) as {
        components: { store: { spooled_writes: number; next: string | null } };
      };
      expect(status.components.store.spooled_writes).toBe(waiting);
      expect(status.components.store.next).toMatch(/tenax store replay/);
      const replayed = await tenaxAsync(home, ["store", "replay", "--json"]);
      expect(replayed.status, replayed.stderr).toBe(0);
      const report = JSON.parse(replayed.stdout) as {
        records: number;
        ops: number;
        superseded: number;
        messages: number;
        settled: string[];
      };
      expect(report.records).toBe(waiting);
      // Each record's ops went in or were left out as superseded (their turn ended meanwhile, the
      // watchdog having resumed it): which, depends on when the server stopped.
      expect(report.ops + report.superseded).toBeGreaterThanOrEqual(waiting);
      const again = JSON.parse((await tenaxAsync(home, ["store", "replay", "--json"])).stdout) as {
        records: number;
      };
      expect(again.records).toBe(0);
      // Refused questions are in their sessions now, each in a turn settled as failed, none running.
      const figures = await expectConsistent(reader);
      expect(figures.turns.filter((t) => t.status === "running")).toEqual([]);
      console.log(
        `postgres outage: replayed ${report.records} spooled writes (${report.ops} operations, ${report.messages} messages, ${report.superseded} superseded, ${report.settled.length} turns settled as failed)`,
      );
    } finally {
      reader.close();
    }
  }, 120_000);
});
