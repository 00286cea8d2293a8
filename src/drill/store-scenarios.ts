// The store's layers: a state.db damaged under a running gateway (the next write fails fast and is
// spooled, /health says the store is down, and recover + restore bring back every acknowledged
// message), and a search index damaged under a running gateway (search degraded, then rebuilt,
// both on the event feed).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { openReader } from "../store/registry.js";
import { btreePages, checkpointWal, garbageAfterHeader, garbagePages } from "./damage.js";
import { runTenax, scenarioGateway, stopGateway } from "./gateway-child.js";
import { chat, feedEvent, health, until } from "./gateway-client.js";
import type { Scenario } from "./runner.js";
import { scratchProfile } from "./scratch.js";

/** The indexes of the messages table: every append touches them, and losing them loses no message. */
const MESSAGE_INDEXES = ["sqlite_autoindex_messages_1", "sqlite_autoindex_messages_2"];
/** A write through a damaged store must fail within this long (it must not hang or retry for long). */
const FAIL_FAST_MS = 5_000;

const corruptedStore: Scenario = {
  fault: "state.db corrupted under a running gateway",
  expected_layer: "store",
  async run(context) {
    const { paths } = await scratchProfile(context);
    const gateway = await scenarioGateway(context);
    // Two acknowledged exchanges before the damage.
    const acked: string[] = [];
    let session: string | null = null;
    for (const text of ["first message before the damage", "second message before the damage"]) {
      const answer = await chat(gateway, text, context.signal, session ?? undefined);
      if (answer.status !== 200 || !answer.sessionId) {
        return { ok: false, detail: `a turn before the damage answered ${answer.status}` };
      }
      session = answer.sessionId;
      acked.push(text, replyText(answer.body));
    }
    if (!session) return { ok: false, detail: "no session" };

    if (!checkpointWal(paths.state))
      return { ok: false, detail: "the WAL could not be checkpointed before the damage" };
    garbagePages(paths.state, btreePages(paths.state, MESSAGE_INDEXES), 6);
    context.injected();
    const during = "written while the store is damaged";
    const started = Date.now();
    // A new conversation: its first write is an append, which meets the damage (continuing the
    // old session would first read its history, which meets it too, before writing anything).
    const failed = await chat(gateway, during, context.signal);
    const writeMs = Date.now() - started;
    let report = await health(gateway, context.signal);
    await until(async () => {
      report = await health(gateway, context.signal);
      return report.components.store?.status === "down";
    }, context.signal);
    for (const [name, component] of Object.entries(report.components))
      if (component.status === "down") context.caught(name);
    const spooled = existsSync(paths.spool) && readdirSync(paths.spool).some((f) => f.endsWith(".jsonl"));

    await stopGateway(gateway);
    const output = join(context.home, "recovered.db");
    const recovered = await runTenax(context.home, [
      "sessions",
      "recover",
      "--source",
      paths.state,
      "--output",
      output,
    ]);
    const restored = await runTenax(context.home, ["sessions", "restore", "--from", output]);
    const reader = openReader(paths);
    let contents: string[];
    try {
      contents = [];
      for (const s of await reader.listSessions())
        for (const m of await reader.getMessages(s.id)) contents.push(m.content ?? "");
    } finally {
      reader.close();
    }
    const missing = [...acked, during].filter((text) => !contents.includes(text));
    const ok =
      // The gateway names the layer that refused: 503 store_unavailable, never a bare 500.
      failed.status === 503 &&
      errorCode(failed.body) === "store_unavailable" &&
      writeMs < FAIL_FAST_MS &&
      spooled &&
      recovered.code === 0 &&
      restored.code === 0 &&
      missing.length === 0;
    return {
      ok,
      detail: [
        `write during the damage: ${failed.status} ${errorCode(failed.body)} in ${writeMs} ms, ${spooled ? "spooled" : "not spooled"}`,
        `health store: ${report.components.store?.status} (${report.components.store?.detail ?? ""})`,
        `recover exit ${recovered.code}, restore exit ${restored.code}`,
        missing.length === 0
          ? `all ${acked.length + 1} acknowledged messages back`
          : `missing after restore: ${missing.join(", ")}`,
      ].join("; "),
    };
  },
};

function replyText(body: unknown): string {
  return String(
    (body as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content ?? "",
  );
}

function errorCode(body: unknown): string {
  return String((body as { error?: { code?: unknown } }).error?.code ?? "no error code");
}

const damagedSearch: Scenario = {
  fault: "search index damaged under a running gateway",
  expected_layer: "store",
  async run(context) {
    const { paths } = await scratchProfile(context);
    const gateway = await scenarioGateway(context);
    const first = await chat(gateway, "zebra notes, the first", context.signal);
    if (first.status !== 200 || !first.sessionId)
      return { ok: false, detail: `a turn answered ${first.status}` };
    // Let the index take those messages (it flushes shortly after a write burst).
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (!checkpointWal(paths.search))
      return { ok: false, detail: "the index's WAL could not be checkpointed" };
    garbageAfterHeader(paths.search, 7);
    context.injected();
    // The next write queues its messages for the index, whose flush meets the damage.
    const second = await chat(gateway, "zebra notes, the second", context.signal, first.sessionId);
    const degraded = await feedEvent(gateway, "search.degraded", context.signal);
    if (degraded.layer) context.caught(degraded.layer);
    const rebuilt = await feedEvent(gateway, "search.rebuilt", context.signal);
    await stopGateway(gateway);
    const reader = openReader(paths);
    let hits: number;
    let expected: number;
    try {
      hits = (await reader.search("zebra", { limit: 100 })).hits.length;
      expected = (await reader.getMessages(first.sessionId)).filter((m) =>
        /zebra/i.test(m.content ?? ""),
      ).length;
    } finally {
      reader.close();
    }
    return {
      ok: second.status === 200 && expected >= 2 && hits === expected,
      detail: `turn during the damage: ${second.status}; feed: ${degraded.message ?? degraded.type} → ${rebuilt.message ?? rebuilt.type}; search afterwards: ${hits} of ${expected} messages found`,
    };
  },
};

export const storeScenarios: readonly Scenario[] = [corruptedStore, damagedSearch];
