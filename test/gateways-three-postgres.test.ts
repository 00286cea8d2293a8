// Three gateways of one profile on one PostgreSQL database, as three hosts would run them (one
// home each, one config), with clients spread over all three while two of them are killed with
// kill -9 and started again. Afterwards: every acknowledged chat turn is stored exactly once and in
// order, every acknowledged run settled and found again by its Idempotency-Key on any gateway; a
// run whose gateway died was completed by another and followed to its end from a third; a cron
// occurrence due while gateways died ran once; each Telegram message sent meanwhile was taken in
// once and answered once (one gateway at a time holds the chat platforms).

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Random, seededRandom } from "../src/core/deps.js";
import { listRuns as listCronRuns } from "../src/cron/records.js";
import { listEntries } from "../src/outbox/entry.js";
import { readChatSession } from "../src/platforms/chat-sessions.js";
import { INBOX_KIND } from "../src/platforms/inbox.js";
import { startTelegramSim, type TelegramSim } from "../src/platforms/telegram/sim/server.js";
import { openProfileReader, type ProfileReader } from "../src/store/registry.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type AckedRun, type AckedTurn, expectAcknowledged, steps } from "./helpers/crash-loop.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { type RunView, readEvents, started, submit, user } from "./helpers/runs-client.js";
import { sharedProfiles } from "./helpers/shared-gateways.js";
import { tempDir } from "./helpers/tmp.js";
import { chatTurn, expectConsistent, tortureSeed } from "./helpers/torture.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();
const telegrams: TelegramSim[] = [];
afterEach(async () => {
  for (const tg of telegrams.splice(0)) await tg.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a failed Telegram check shows: the first unanswered entries, their chats' sessions and turns, the gateways' platform lines. */
async function whyUnanswered(
  open: () => Promise<ProfileReader>,
  unanswered: readonly { key: string; value: unknown }[],
  pool: Pool,
): Promise<string> {
  const r = await open();
  try {
    const lines: string[] = [];
    for (const entry of unanswered.slice(0, 3)) {
      lines.push(`inbox ${entry.key}: ${JSON.stringify(entry.value)}`);
      const key = (entry.value as { session_key?: string }).session_key ?? "";
      const chat = await readChatSession(r, key);
      lines.push(`  chat session: ${JSON.stringify(chat)}`);
      for (const id of new Set([chat?.session_id, chat?.running?.session_id])) {
        if (id === undefined) continue;
        for (const t of await r.getTurns(id))
          lines.push(
            `  turn ${t.id} of ${id}: ${t.status} owner=${t.lease_owner} epoch=${t.lease_epoch} error=${t.error}`,
          );
      }
    }
    for (const [i, gw] of pool.started.entries()) {
      const said = `${gw.stdout()}\n${gw.stderr()}`
        .split("\n")
        .filter((l) => /chat platforms|platforms|telegram|resum|took over|interrupt/i.test(l));
      lines.push(`gateway #${i} (pid ${gw.child.pid}):`, ...said.slice(-25).map((l) => `  ${l}`));
    }
    return lines.join("\n");
  } finally {
    r.close();
  }
}

/** The gateways as a load balancer sees them: a slot per host, empty while its gateway is down. */
class Pool {
  constructor(
    readonly slots: (GatewayProcess | null)[],
    private readonly random: Random,
  ) {
    this.started = slots.filter((g): g is GatewayProcess => g !== null);
  }

  /** A live gateway, chosen at random (never null: at least one always runs). */
  pick(): GatewayProcess {
    const live = this.slots.filter((g): g is GatewayProcess => g !== null);
    const chosen = live[Math.floor(this.random() * live.length)];
    if (chosen === undefined) throw new Error("no gateway runs");
    return chosen;
  }

  /** Every gateway started, killed ones too: their output tells what happened when a check fails. */
  readonly started: GatewayProcess[];

  /** Put a (re)started gateway in slot `i`. */
  add(i: number, gw: GatewayProcess): void {
    this.slots[i] = gw;
    this.started.push(gw);
  }

  /** kill -9 the gateway of slot `i`; it takes no more requests from here on. */
  async kill(i: number): Promise<void> {
    const gw = this.slots[i];
    if (!gw) return;
    this.slots[i] = null;
    gw.child.kill("SIGKILL");
    await gw.exited;
  }
}

interface Load {
  live: boolean;
  acked: AckedTurn[];
  runs: AckedRun[];
  /** Answers that are neither an acknowledgement nor a gateway dying under the request. */
  odd: string[];
  /** 409 session_busy answers (a session's turn still being taken over): not acknowledged. */
  busy: number;
}

async function chatClient(pool: Pool, load: Load, c: number): Promise<void> {
  let session: string | null = null;
  for (let n = 0; load.live; n++) {
    const text = `c${c} m${n}`;
    let answer: Awaited<ReturnType<typeof chatTurn>>;
    try {
      answer = await chatTurn(pool.pick(), text, session);
    } catch {
      continue; // its gateway died under it: not acknowledged; the client goes to another
    }
    // The script can make the model read the same file three times in a row: the guardrail halts
    // that turn, rightly, with a 422; the session goes on.
    if (answer.status === 422 && answer.code === "identical_call_limit" && answer.sessionId !== null) {
      session = answer.sessionId;
      continue;
    }
    if (answer.status === 409 && answer.code === "session_busy") {
      load.busy++;
      await sleep(200);
      continue;
    }
    if (answer.status !== 200 || answer.sessionId === null || answer.turn === null) {
      load.odd.push(`${text}: ${answer.status} ${answer.code} ${answer.reply}`);
      await sleep(100);
      continue;
    }
    session = answer.sessionId;
    load.acked.push({ sessionId: answer.sessionId, text, reply: answer.reply, turn: answer.turn });
  }
}

async function runClient(pool: Pool, load: Load, c: number): Promise<void> {
  for (let n = 0; load.live; n++) {
    const key = `three-${c}-${n}`;
    const body = user(`r${c} m${n}`);
    let run: RunView;
    try {
      const response = await submit(pool.pick(), body, { "idempotency-key": key });
      run = (await response.json()) as RunView;
      if (response.status !== 202) {
        load.odd.push(`r${c} m${n}: ${response.status} ${JSON.stringify(run)}`);
        await sleep(100);
        continue;
      }
    } catch {
      continue;
    }
    load.runs.push({ runId: run.run_id, key, sessionHeader: null, body, sessionId: run.session_id });
    // Its state, asked of whichever gateway the balancer picks, until it ends.
    while (load.live && (run.status === "running" || run.status === "queued")) {
      await sleep(150);
      try {
        run = (await (await pool.pick().fetch(`/v1/runs/${run.run_id}`)).json()) as RunView;
      } catch {
        // that gateway died: ask another
      }
    }
  }
}

const TOKEN = "123456789:AAHtest-token-for-three-gateways";
const CHATS = [42, 77];

/** Messages from two Telegram users, one every 300 ms while the load runs. */
async function telegramClient(tg: TelegramSim, load: Load, sent: string[]): Promise<void> {
  for (let n = 0; load.live; n++) {
    const chat = CHATS[n % CHATS.length] ?? 42;
    const text = `tg ${n}`;
    tg.injectMessage({ chat, from: chat, text });
    sent.push(text);
    await sleep(300);
  }
}

/** Once no turn and no run is running in the store, twice in a row. */
async function settled(open: () => Promise<ProfileReader>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (let quiet = 0; quiet < 2; ) {
    if (Date.now() > deadline) throw new Error("the gateways did not settle");
    await sleep(300);
    const reader = await open();
    const running =
      (await reader.runningTurns()).length +
      (await reader.listRecords<{ status: string }>("run")).filter(
        (r) => r.value.status === "running" || r.value.status === "queued",
      ).length;
    reader.close();
    quiet = running === 0 ? quiet + 1 : 0;
  }
}

describe("three gateways on one PostgreSQL", () => {
  it("clients over all three while two are killed and restarted: nothing acknowledged is lost or doubled", async () => {
    const random = seededRandom(tortureSeed("gateways-three-postgres"));
    const url = await cluster().createDatabase();
    const tg = await startTelegramSim({ token: TOKEN, chats: CHATS.map((id) => ({ id })) });
    telegrams.push(tg);
    const notesDir = tempDir();
    const notes = join(notesDir, "notes.txt");
    writeFileSync(notes, "something to read\n");
    const { sim, paths, homes } = await sharedProfiles(
      3,
      url,
      [
        "gateway: { max_turns: 64, drain_timeout: 2 }",
        "agent: { lease_seconds: 5 }",
        `platforms:\n  telegram: { token: "${TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${CHATS.join(", ")}], poll_timeout: 1 }`,
      ].join("\n"),
      `tools: { exec: { mode: full }, files: { roots: [${JSON.stringify(notesDir)}] } }`,
    );
    const open = async () =>
      (await openProfileReader(paths[0] as never, { engine: "postgres", url })) as ProfileReader;
    const pool = new Pool(await Promise.all(homes.map((home) => startGateway(home))), random);
    const gw = (i: number) => {
      const g = pool.slots[i];
      if (!g) throw new Error(`gateway ${i} is down`);
      return g;
    };

    // A cron occurrence due while gateways die: claimed once, whoever holds it.
    const added = await tenaxAsync(homes[0] ?? "", [
      "cron",
      "add",
      "once",
      "--schedule",
      "in 12s",
      "--prompt",
      "the cron occurrence",
      "--deliver",
      "local",
    ]);
    expect(added.status, added.stderr).toBe(0);

    // The run that loses its gateway: slow, on gateway 1, followed from gateway 2 throughout.
    sim.script([
      {
        type: "reply",
        text: "a long answer gateway 1 never finishes ".repeat(8),
        chunk_size: 3,
        chunk_delay_ms: 150,
      },
    ]);
    const doomed = await started(
      await submit(gw(1), user("outlive your gateway"), { "idempotency-key": "doomed" }),
    );
    const follower = readEvents(gw(2), doomed.run_id);
    await readEvents(gw(2), doomed.run_id, { stopAfter: 3 });

    // Then slow replies and tool calls for the clients, so kills land mid-turn.
    sim.script(steps(random, notes, 400));
    const load: Load = { live: true, acked: [], runs: [], odd: [], busy: 0 };
    const telegram: string[] = [];
    const clients = [
      ...Array.from({ length: 4 }, (_, c) => chatClient(pool, load, c)),
      ...Array.from({ length: 2 }, (_, c) => runClient(pool, load, c)),
      telegramClient(tg, load, telegram),
    ];
    // Two gateways die with kill -9 mid-load, each started again a little later.
    await sleep(1_500 + Math.floor(random() * 1_000));
    await pool.kill(1);
    await sleep(3_000);
    pool.add(1, await startGateway(homes[1] ?? ""));
    await sleep(2_000 + Math.floor(random() * 2_000));
    await pool.kill(0);
    await sleep(3_000);
    pool.add(0, await startGateway(homes[0] ?? ""));
    await sleep(4_000);
    load.live = false;
    await Promise.all(clients);

    // The doomed run: completed by another gateway, followed to its end from the third.
    const { events, ended } = await follower;
    expect(ended).toBe(true);
    expect(events.map((e) => e.event)).toContain("run.resumed");
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", status: "completed" });

    await settled(open);
    // The cron occurrence ran once (its time passed while gateway 0 was down).
    const until = Date.now() + 30_000;
    let cronRuns = await listCronRuns(await open(), "once");
    while (cronRuns.filter((r) => r.state === "ok").length === 0 && Date.now() < until) {
      await sleep(500);
      cronRuns = await listCronRuns(await open(), "once");
    }
    expect(cronRuns.map((r) => r.state)).toEqual(["ok"]);
    await settled(open);

    // Every Telegram message taken in once and answered: each update is one inbox entry, done, with
    // its answer delivered (answers are keyed by their update: two are impossible by construction).
    let answered = 0;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await open();
      const inbox = await r.listRecords<{ key: string; state: string }>(INBOX_KIND);
      const chats = (await listEntries(r)).filter((e) => e.channel === "telegram");
      r.close();
      const answers = chats.filter((e) => e.origin?.startsWith("inbox:") && e.state === "delivered");
      const done = inbox.length === telegram.length && inbox.every((e) => e.value.state === "done");
      const pending = chats.filter((e) => e.state === "pending").length;
      const unanswered = inbox.filter((e) => !answers.some((a) => a.origin === `inbox:${e.value.key}`));
      if (done && pending === 0 && unanswered.length === 0) {
        const delivered = chats.filter((e) => e.state === "delivered").length;
        const sentByBot = CHATS.reduce((n, chat) => n + tg.sentMessages(chat).length, 0);
        // Telegram has no idempotency key: only a kill between its acceptance of a message and
        // the delivered mark may send that one message again (at most one per kill).
        expect(sentByBot).toBeGreaterThanOrEqual(delivered);
        expect(sentByBot - delivered).toBeLessThanOrEqual(2);
        expect(tg.calls("getUpdates").filter((c) => c.status === 409)).toEqual([]);
        answered = inbox.length;
        break;
      }
      if (Date.now() > deadline)
        throw new Error(
          `telegram: ${inbox.length} of ${telegram.length} taken in, ${pending} sends pending, unanswered: ${unanswered.map((e) => e.key).join(", ")}\n${await whyUnanswered(open, unanswered, pool)}`,
        );
      await sleep(500);
    }

    const reader = await open();
    try {
      const figures = await expectConsistent(reader);
      const checked = await expectAcknowledged(reader, load.acked, load.runs);
      console.log(
        `three gateways: ${load.acked.length} chat turns, ${load.runs.length} runs and ${answered} Telegram messages acknowledged, ${checked} checks; ${figures.turns.length} turns stored (${figures.turns.filter((t) => t.interrupt_count > 0).length} taken over); ${load.busy} session_busy answers`,
      );
    } finally {
      reader.close();
    }
    // Every acknowledged run is found again by its key, on any gateway.
    for (const run of load.runs) {
      const again = await submit(pool.pick(), run.body, { "idempotency-key": run.key });
      expect(again.status, `run ${run.runId} retried`).toBe(200);
      expect(((await again.json()) as RunView).run_id).toBe(run.runId);
    }
    expect(load.odd).toEqual([]);
    expect(load.acked.length).toBeGreaterThan(10);
  }, 240_000);
});
