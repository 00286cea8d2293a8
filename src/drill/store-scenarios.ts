// The store's layers: a state.db damaged under a running gateway (the next write fails fast and is
// spooled, /health says the store is down, and recover + restore bring back every acknowledged
// message), and a damaged search index (search says it is degraded; the next writer rebuilds it).
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SearchUnavailableError } from "../store/errors.js";
import { openReader, openStore, releaseStore } from "../store/registry.js";
import { btreePages, checkpointWal, garbageAfterHeader, garbagePages } from "./damage.js";
import { type GatewayChild, killHard, runTenax, startGateway, stopGateway } from "./gateway-child.js";
import { chat, health, until } from "./gateway-client.js";
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
    let gateway: GatewayChild | null = await startGateway(context.home);
    context.defer(() => (gateway ? killHard(gateway) : undefined));
    // Two acknowledged exchanges before the damage.
    const acked: string[] = [];
    let session: string | null = null;
    for (const text of ["first message before the damage", "second message before the damage"]) {
      const answer = await chat(gateway.url, text, context.signal, session ?? undefined);
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
    const failed = await chat(gateway.url, during, context.signal);
    const writeMs = Date.now() - started;
    const url = gateway.url;
    let report = await health(url, context.signal);
    await until(async () => {
      report = await health(url, context.signal);
      return report.components.store?.status === "down";
    }, context.signal);
    for (const [name, component] of Object.entries(report.components))
      if (component.status === "down") context.caught(name);
    const spooled = existsSync(paths.spool) && readdirSync(paths.spool).some((f) => f.endsWith(".jsonl"));

    await stopGateway(gateway);
    gateway = null;
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
      contents = reader.listSessions().flatMap((s) => reader.getMessages(s.id).map((m) => m.content ?? ""));
    } finally {
      reader.close();
    }
    const missing = [...acked, during].filter((text) => !contents.includes(text));
    const ok =
      failed.status >= 500 &&
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
  fault: "search index damaged",
  expected_layer: "store",
  async run(context) {
    const { paths } = await scratchProfile(context);
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.index.rebuild();
    const session = await store.createSession({ title: "drill: zebra notes" });
    for (let i = 0; i < 100; i++)
      await store.appendMessage({ session_id: session, role: "user", content: `note ${i} about the zebra` });
    store.index.flush();
    await releaseStore(store);

    garbageAfterHeader(paths.search, 7);
    context.injected();
    const reader = openReader(paths);
    let degraded: SearchUnavailableError | null = null;
    try {
      reader.search("zebra");
    } catch (error) {
      if (error instanceof SearchUnavailableError) degraded = error;
      else throw error;
    } finally {
      reader.close();
    }
    // The search index is part of the store layer; the error says so and names its fix.
    if (degraded) context.caught("store");

    // The next writer notices on open and rebuilds from the transcripts.
    const writer = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    context.defer(() => releaseStore(writer));
    await until(() => writer.health().search.status === "ok", context.signal);
    const hits = writer.search("zebra", { limit: 500 }).hits.length;
    return {
      ok: degraded !== null && hits === 100,
      detail: `${degraded ? `search said: ${degraded.message}` : "search did not report the damage"}; after reopening: ${writer.health().search.status}, ${hits} of 100 hits`,
    };
  },
};

export const storeScenarios: readonly Scenario[] = [corruptedStore, damagedSearch];
