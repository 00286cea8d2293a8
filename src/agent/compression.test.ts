// Context compression end to end: the real simulator over HTTP as the summarizer, the real store
// (records, markers, transcripts), and fake time for the cooldown and pause arithmetic.
import { afterEach, describe, expect, it } from "vitest";
import { type FakeDeps, fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { configSchema } from "../config/schema.js";
import { ProviderError } from "../llm/classified-error.js";
import type { RouteEvent } from "../llm/route-events.js";
import { createModelRuntime, type ModelRuntime } from "../llm/runtime.js";
import { type Simulator, startSimulator } from "../llm/simulator/server.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { MessageView } from "../store/rows.js";
import type { Store } from "../store/store.js";
import {
  type CompressionEvent,
  type CompressionInput,
  type CompressionReason,
  Compressor,
  newTurnCompressionState,
  type TurnCompressionState,
} from "./compression.js";
import { COMPONENT_KIND, COMPRESSION_COMPONENT_KEY, readCooldown, readPause } from "./compression-state.js";
import { buildHistory, COMPACTION_KIND, type Compaction, MARKER_ROLE } from "./history.js";

const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const WINDOW = 4_000;

interface Rig {
  sim: Simulator;
  rt: ModelRuntime;
  store: Store;
  paths: ProfilePaths;
  deps: FakeDeps;
  events: CompressionEvent[];
  routeEvents: RouteEvent[];
  compressor: Compressor;
  /** Another compressor over the same store, as after a restart. */
  fresh(): Compressor;
}

async function rig(
  options: { summarizerWindow?: number; compression?: Record<string, unknown>; timeout?: number } = {},
): Promise<Rig> {
  const summarizerWindow = options.summarizerWindow ?? 50_000;
  const sim = await startSimulator({
    models: { main: { context_window: WINDOW }, summarizer: { context_window: summarizerWindow } },
  });
  closers.push(() => sim.close());
  const config = configSchema.parse({
    model: { provider: "sim", name: "main" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        models: {
          main: { context_window: WINDOW, max_output_tokens: 500 },
          summarizer: { context_window: summarizerWindow, max_output_tokens: 500 },
        },
      },
    },
    auxiliary: { compression: { provider: "sim", name: "summarizer", timeout: options.timeout ?? 30 } },
    retry: { max_attempts: 1 },
    compression: { summary_max_tokens: 300, ...options.compression },
  });
  const rt = await createModelRuntime(config, { deps: fakeDeps(7) });
  closers.push(() => rt.close());
  const deps = fakeDeps();
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0, deps });
  closers.push(() => releaseStore(store));
  const events: CompressionEvent[] = [];
  const routeEvents: RouteEvent[] = [];
  const make = () =>
    new Compressor({
      router: rt.router,
      store,
      deps,
      settings: config.compression,
      onEvent: (e) => events.push(e),
      onRouteEvent: (e) => routeEvents.push(e),
    });
  return { sim, rt, store, paths, deps, events, routeEvents, compressor: make(), fresh: make };
}

const words = (label: string, n: number) => `${label} ${"lorem ipsum dolor ".repeat(n)}`.trim();

/** One exchange: a question, a tool call and its result, and the answer. */
async function exchange(store: Store, sessionId: string, k: number, size = 20): Promise<void> {
  const id = `call_${k}`;
  await store.appendMessages([
    { session_id: sessionId, role: "user", content: words(`question ${k}`, size) },
    {
      session_id: sessionId,
      role: "assistant",
      content: null,
      tool_calls: [{ id, name: "read_file", arguments: JSON.stringify({ path: `notes/${k}.md` }) }],
    },
    {
      session_id: sessionId,
      role: "tool",
      tool_call_id: id,
      name: "read_file",
      content: words(`contents of notes/${k}.md`, size * 2),
    },
    { session_id: sessionId, role: "assistant", content: words(`answer ${k}`, size) },
  ]);
}

async function conversation(store: Store, exchanges: number, size = 20): Promise<string> {
  const sessionId = await store.createSession();
  await store.appendMessages([
    { session_id: sessionId, role: "user", content: "first question: what is this project about?" },
    { session_id: sessionId, role: "assistant", content: "first answer: it is an agent runtime." },
  ]);
  for (let k = 2; k <= exchanges; k++) await exchange(store, sessionId, k, size);
  return sessionId;
}

async function input(
  r: Rig,
  sessionId: string,
  reason: CompressionReason = "threshold",
  more: Partial<CompressionInput> = {},
): Promise<CompressionInput> {
  return {
    sessionId,
    turnId: null,
    transcript: await r.store.getMessages(sessionId),
    compaction: await r.store.getRecord<Compaction>(COMPACTION_KIND, sessionId),
    system: "You are Tenax.",
    window: WINDOW,
    lastInputTokens: null,
    reason,
    signal: new AbortController().signal,
    ...more,
  };
}

const summaryReply = (text: string) => ({ type: "reply" as const, text });

function summarizerPrompt(sim: Simulator, index = 0): string {
  const body = sim.requests()[index]?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages.map((m) => m.content).join("\n");
}

function markers(transcript: MessageView[]): MessageView[] {
  return transcript.filter((m) => m.role === MARKER_ROLE);
}

/**
 * Every tool result sent comes right after the assistant message that called it, and none was
 * lost (buildHistory drops a result whose call was cut away, so a split shows as a missing one).
 */
function expectPairedTools(
  messages: ReturnType<typeof buildHistory>,
  transcript: MessageView[],
  c: Compaction,
) {
  const visible = transcript.filter(
    (m) => m.role === "tool" && (m.seq <= c.head_until_seq || m.seq > c.middle_until_seq),
  );
  expect(messages.filter((m) => m.role === "tool")).toHaveLength(visible.length);
  let open: string[] = [];
  for (const m of messages) {
    if (m.role === "tool") {
      expect(open).toContain(m.tool_call_id);
      open = open.filter((id) => id !== m.tool_call_id);
    } else {
      open = m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [];
    }
  }
}

describe("compression of a long conversation", () => {
  it("keeps head and tail word for word, summarizes the middle, never splits a tool call from its result", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 9);
    const before = await r.store.getMessages(sessionId);
    const first = await input(r, sessionId);
    expect(r.compressor.needed(first)).toBe(true);

    r.sim.script([summaryReply("The user asked about notes 2 to 7; each was read and answered.")]);
    const turn = newTurnCompressionState();
    const compaction = await r.compressor.compress(first, turn);
    expect(compaction).not.toBeNull();
    if (!compaction) return;

    // The head is the first exchange; the tail starts at a user message (a whole turn).
    const seqOf = (text: string) => before.find((m) => m.content?.startsWith(text))?.seq;
    expect(compaction.head_until_seq).toBe(seqOf("first answer"));
    const tailStart = before.find((m) => m.seq === compaction.middle_until_seq + 1);
    expect(tailStart?.role).toBe("user");
    expect(compaction.summary).toBe("The user asked about notes 2 to 7; each was read and answered.");
    expect(turn.attempts).toBe(1);

    // The summarizer read the middle, and neither the head nor the tail.
    expect(r.sim.requests()).toHaveLength(1);
    const prompt = summarizerPrompt(r.sim);
    expect(prompt).toContain("question 2");
    expect(prompt).toContain("contents of notes/2.md");
    expect(prompt).toContain("[assistant calls read_file]");
    expect(prompt).not.toContain("first question");
    expect(prompt).not.toContain("question 9");
    for (const m of before.filter(
      (m) => m.seq > compaction.head_until_seq && m.seq <= compaction.middle_until_seq,
    )) {
      if (m.content) expect(prompt).toContain(m.content.slice(0, 40));
    }

    // What the model sees next: head and tail verbatim, the summary between, tools paired.
    const after = await r.store.getMessages(sessionId);
    const history = buildHistory(after, { system: "You are Tenax.", compaction });
    expectPairedTools(history, after, compaction);
    const sent = history.map((m) => m.content ?? "").join("\n");
    expect(sent).toContain("first question: what is this project about?");
    expect(sent).toContain("first answer: it is an agent runtime.");
    expect(sent).toContain(before.at(-1)?.content ?? "missing");
    expect(sent).toContain("The user asked about notes 2 to 7");
    expect(sent).not.toContain("question 2 ");
    for (const m of before.filter((m) => m.seq > compaction.middle_until_seq)) {
      if (m.content) expect(sent).toContain(m.content);
    }

    // Persisted: the record, one marker saying what was compressed; every original still stored.
    expect(await r.store.getRecord(COMPACTION_KIND, sessionId)).toEqual(compaction);
    const [marker] = markers(after);
    expect(markers(after)).toHaveLength(1);
    expect(marker?.content).toMatch(
      new RegExp(
        `^compressed ${compaction.messages} messages \\(seq \\d+–${compaction.middle_until_seq}\\) into a summary of \\d+ tokens`,
      ),
    );
    expect(after.filter((m) => m.role !== MARKER_ROLE)).toEqual(before);

    const done = r.events.find((e) => e.type === "compression_done");
    expect(r.events.map((e) => e.type)).toEqual(["compression_started", "compression_done"]);
    if (done?.type !== "compression_done") throw new Error("no done event");
    expect(done.tokens_after).toBeLessThan(done.tokens_before / 2);
    expect(done.paused_until).toBeNull();
    expect(r.compressor.needed({ ...(await input(r, sessionId)), compaction })).toBe(false);
  });

  it("cuts a long last turn only at an assistant message whose tool calls are all answered", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 3);
    // One turn of many tool rounds, larger than the tail budget on its own.
    await r.store.appendMessage({ session_id: sessionId, role: "user", content: "refactor everything" });
    for (let k = 0; k < 12; k++) {
      const ids = [`a${k}`, `b${k}`];
      await r.store.appendMessages([
        {
          session_id: sessionId,
          role: "assistant",
          content: words(`round ${k}`, 5),
          tool_calls: ids.map((id) => ({ id, name: "terminal", arguments: '{"command":"ls"}' })),
        },
        ...ids.map((id) => ({
          session_id: sessionId,
          role: "tool",
          tool_call_id: id,
          content: words(`output ${id}`, 15),
        })),
      ]);
    }
    r.sim.script([summaryReply("Earlier rounds listed files.")]);
    const compaction = await r.compressor.compress(await input(r, sessionId), newTurnCompressionState());
    expect(compaction).not.toBeNull();
    if (!compaction) return;
    const transcript = await r.store.getMessages(sessionId);
    const tailStart = transcript.find((m) => m.seq > compaction.middle_until_seq && m.role !== MARKER_ROLE);
    expect(tailStart?.role).toBe("assistant");
    expect(tailStart?.content).toMatch(/^round \d+/);
    expectPairedTools(buildHistory(transcript, { compaction }), transcript, compaction);
    // Every tool result stays on the same side of the cut as its call.
    const side = (seq: number) => seq <= compaction.middle_until_seq;
    const callSeq = new Map<string, number>();
    for (const m of transcript) {
      for (const c of (m.tool_calls ?? []) as Array<{ id: string }>) callSeq.set(c.id, m.seq);
      if (m.role === "tool" && m.tool_call_id)
        expect(side(callSeq.get(m.tool_call_id) ?? -1)).toBe(side(m.seq));
    }
  });

  it("a second pass extends the first: the summarizer gets the old summary and only the new messages", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 6);
    r.sim.script([summaryReply("SUMMARY-ONE: notes 2 to 5 were read.")]);
    const one = await r.compressor.compress(await input(r, sessionId), newTurnCompressionState());
    expect(one?.summary).toContain("SUMMARY-ONE");
    for (let k = 7; k <= 10; k++) await exchange(r.store, sessionId, k);

    r.sim.script([summaryReply("SUMMARY-TWO: notes 2 to 9 were read.")]);
    const two = await r.compressor.compress(await input(r, sessionId), newTurnCompressionState());
    if (!one || !two) throw new Error("expected two compactions");
    expect(two.head_until_seq).toBe(one.head_until_seq);
    expect(two.middle_until_seq).toBeGreaterThan(one.middle_until_seq);
    const prompt = summarizerPrompt(r.sim, 1);
    expect(prompt).toContain("SUMMARY-ONE");
    const transcript = await r.store.getMessages(sessionId);
    const between = (m: MessageView, low: number, high: number) =>
      m.role !== MARKER_ROLE && m.content !== null && m.seq > low && m.seq <= high;
    const oldMiddle = transcript.filter((m) => between(m, one.head_until_seq, one.middle_until_seq));
    const newMiddle = transcript.filter((m) => between(m, one.middle_until_seq, two.middle_until_seq));
    expect(oldMiddle.length).toBeGreaterThan(0);
    expect(newMiddle.length).toBeGreaterThan(0);
    for (const m of oldMiddle) expect(prompt).not.toContain(m.content?.slice(0, 40));
    for (const m of newMiddle) expect(prompt).toContain(m.content?.slice(0, 40));
    const hidden = transcript.filter(
      (m) => m.role !== MARKER_ROLE && m.seq > two.head_until_seq && m.seq <= two.middle_until_seq,
    );
    expect(two.messages).toBe(hidden.length);
    expect(markers(transcript)).toHaveLength(2);
    expect(markers(transcript)[1]?.content).toContain("of them new since the last compression");
  });
});

describe("summarizer failures", () => {
  const fail500 = { type: "error" as const, status: 500, body: { error: { message: "internal error" } } };

  it("start a cooldown of 1, then 5 minutes, kept in the store; threshold passes wait it out; success resets it", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 9);
    const start = r.deps.clock.now();

    r.sim.script([fail500]);
    expect(await r.compressor.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(1);
    expect(await readCooldown(r.store)).toMatchObject({ failures: 1, cooldown_until: start + 60_000 });
    const failed = r.events.find((e) => e.type === "compression_failed");
    expect(failed).toMatchObject({ why: "summarizer_failed", failures: 1, cooldown_until: start + 60_000 });
    // Still fits the window: nothing dropped, no compaction, no marker.
    expect(await r.store.getRecord(COMPACTION_KIND, sessionId)).toBeNull();
    expect(markers(await r.store.getMessages(sessionId))).toEqual([]);
    expect(r.events.map((e) => e.type)).not.toContain("compression_dropped");

    // A new compressor (a restart) over the same store sees the cooldown and calls nobody.
    r.events.length = 0;
    r.deps.advance(59_000);
    const restarted = r.fresh();
    expect(await restarted.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(1);
    expect(r.events).toEqual([
      expect.objectContaining({ type: "compression_skipped", why: "cooldown", until: start + 60_000 }),
    ]);

    // Once over, the next failure cools it for 5 minutes.
    r.deps.advance(1_000);
    r.sim.script([fail500]);
    expect(await restarted.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(2);
    expect(await readCooldown(r.store)).toMatchObject({
      failures: 2,
      cooldown_until: r.deps.clock.now() + 300_000,
    });

    r.deps.advance(299_000);
    expect(await restarted.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(2);

    r.deps.advance(1_000);
    r.sim.script([summaryReply("All the notes were read.")]);
    const done = await restarted.compress(await input(r, sessionId), newTurnCompressionState());
    expect(done?.summary).toBe("All the notes were read.");
    expect(await readCooldown(r.store)).toBeNull();
    expect(await r.store.getRecord(COMPONENT_KIND, COMPRESSION_COMPONENT_KEY)).toBeNull();
  });

  it("an empty summary is a failure too", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 9);
    r.sim.script([summaryReply("   ")]);
    expect(await r.compressor.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.events.at(-1)).toMatchObject({ type: "compression_failed", why: "empty_summary", failures: 1 });
    expect((await readCooldown(r.store))?.failures).toBe(1);
  });

  it("a provider-proven overflow goes through the cooldown once per turn, not twice", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 9);
    r.sim.script([fail500]);
    await r.compressor.compress(await input(r, sessionId), newTurnCompressionState());
    expect((await readCooldown(r.store))?.failures).toBe(1);

    // Turn B: the provider said the context is too long. One attempt goes through the cooldown;
    // it fails, and since the request cannot be sent as it is, the middle is dropped with a marker.
    const turnB = newTurnCompressionState();
    r.events.length = 0;
    r.sim.script([fail500]);
    const dropped = await r.compressor.compress(await input(r, sessionId, "overflow"), turnB);
    expect(r.sim.requests()).toHaveLength(2);
    expect(turnB.overflowBypassUsed).toBe(true);
    expect(r.events[0]).toMatchObject({ type: "compression_started", cooldown_bypassed: true });
    expect(dropped?.summary).toBeNull();
    expect(r.events.map((e) => e.type)).toEqual([
      "compression_started",
      "compression_failed",
      "compression_dropped",
    ]);
    expect(r.events.at(-1)).toMatchObject({ why: "failed_over_window" });
    expect((await readCooldown(r.store))?.failures).toBe(2);

    // A second overflow in the same turn does not reach the summarizer.
    for (let k = 10; k <= 13; k++) await exchange(r.store, sessionId, k);
    r.events.length = 0;
    expect(await r.compressor.compress(await input(r, sessionId, "overflow"), turnB)).toBeNull();
    expect(r.sim.requests()).toHaveLength(2);
    expect(r.events).toEqual([expect.objectContaining({ type: "compression_skipped", why: "cooldown" })]);
    expect(turnB.attempts).toBe(1);

    // The next turn gets its own one attempt.
    r.sim.script([summaryReply("Notes 2 to 12 were read.")]);
    const next = await r.compressor.compress(
      await input(r, sessionId, "overflow"),
      newTurnCompressionState(),
    );
    expect(r.sim.requests()).toHaveLength(3);
    expect(next?.summary).toBe("Notes 2 to 12 were read.");
    expect(await readCooldown(r.store)).toBeNull();
  });

  it("tries at most max_attempts_per_turn times in one turn", async () => {
    const r = await rig({ compression: { max_attempts_per_turn: 2 } });
    const sessionId = await conversation(r.store, 9);
    const turn = newTurnCompressionState();
    r.sim.script([fail500, fail500, fail500]);
    for (let i = 0; i < 3; i++) await r.compressor.compress(await input(r, sessionId, "manual"), turn);
    expect(r.sim.requests()).toHaveLength(2);
    expect(turn.attempts).toBe(2);
    expect(r.events.at(-1)).toMatchObject({ type: "compression_skipped", why: "budget" });
  });
});

describe("no summarizer", () => {
  it("drops the middle with a visible marker and an event when no summarizer model can hold it", async () => {
    const r = await rig({ summarizerWindow: 600 });
    const sessionId = await conversation(r.store, 9);
    const before = await r.store.getMessages(sessionId);
    const compaction = await r.compressor.compress(await input(r, sessionId), newTurnCompressionState());
    expect(r.sim.requests()).toHaveLength(0);
    expect(r.routeEvents.map((e) => e.type)).toEqual(["auxiliary_skipped", "auxiliary_exhausted"]);
    expect(compaction).toMatchObject({ summary: null });
    if (!compaction) return;

    const after = await r.store.getMessages(sessionId);
    expect(after.filter((m) => m.role !== MARKER_ROLE)).toEqual(before);
    const [marker] = markers(after);
    expect(marker?.content).toMatch(
      new RegExp(`^dropped ${compaction.messages} messages \\(seq \\d+–${compaction.middle_until_seq}\\)`),
    );
    expect(marker?.content).toContain("no summarizer model could take them (sim/summarizer: context_window)");
    expect(r.events.at(-1)).toMatchObject({
      type: "compression_dropped",
      why: "no_summarizer",
      messages: compaction.messages,
    });
    // The model is told too, and is never sent the marker itself.
    const sent = buildHistory(after, { compaction });
    expect(sent.map((m) => m.content).join("\n")).toContain(`${compaction.messages} earlier messages`);
    expect(sent.some((m) => m.content === marker?.content)).toBe(false);
    expect(await readCooldown(r.store)).toBeNull();
  });
});

describe("interrupts", () => {
  it("an abort during a hung summarizer call rejects at once, closes the request and records nothing", async () => {
    const r = await rig({ timeout: 600 });
    const sessionId = await conversation(r.store, 9);
    r.sim.script([{ type: "hang", phase: "before_headers" }]);
    const controller = new AbortController();
    const started = Date.now();
    const pending = r.compressor.compress(
      await input(r, sessionId, "threshold", { signal: controller.signal }),
      newTurnCompressionState(),
    );
    const outcome = pending.then(
      () => null,
      (error: unknown) => error,
    );
    while (r.sim.requests().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const error = await outcome;
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).classified.reason).toBe("aborted");

    await r.sim.idle();
    expect(r.sim.requests()).toHaveLength(1);
    expect(r.sim.requests()[0]?.ended).toBe("client_closed");
    expect(await readCooldown(r.store)).toBeNull();
    expect(await r.store.getRecord(COMPACTION_KIND, sessionId)).toBeNull();
    expect(markers(await r.store.getMessages(sessionId))).toEqual([]);
    expect(r.events.map((e) => e.type)).toEqual(["compression_started"]);
  });

  it("an already aborted signal calls nobody", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 9);
    const controller = new AbortController();
    controller.abort();
    await expect(
      r.compressor.compress(
        await input(r, sessionId, "overflow", { signal: controller.signal }),
        newTurnCompressionState(),
      ),
    ).rejects.toThrow();
    expect(r.sim.requests()).toHaveLength(0);
  });
});

describe("passes that save little", () => {
  it("pause automatic compression of that session, and only that session, for a while", async () => {
    const r = await rig({ compression: { threshold: 0.5, keep_recent: 0.45 } });
    // A big first exchange (the head) and a big recent turn leave a small middle to save.
    const sessionId = await r.store.createSession();
    const bigSession = async (id: string) => {
      await r.store.appendMessages([
        { session_id: id, role: "user", content: "first question: read the spec" },
        { session_id: id, role: "assistant", content: words("the spec says", 400) },
        { session_id: id, role: "user", content: words("small middle question", 20) },
        { session_id: id, role: "assistant", content: words("small middle answer", 20) },
        { session_id: id, role: "user", content: words("recent question", 300) },
        { session_id: id, role: "assistant", content: words("recent answer", 10) },
      ]);
    };
    await bigSession(sessionId);
    const start = r.deps.clock.now();
    r.sim.script([summaryReply("A small question.")]);
    const turn: TurnCompressionState = newTurnCompressionState();
    const compaction = await r.compressor.compress(await input(r, sessionId), turn);
    expect(compaction?.summary).toBe("A small question.");
    const done = r.events.find((e) => e.type === "compression_done");
    if (done?.type !== "compression_done") throw new Error("no done event");
    expect((done.tokens_before - done.tokens_after) / done.tokens_before).toBeLessThan(0.1);
    expect(done.paused_until).toBe(start + 1_800_000);
    expect(await readPause(r.store, sessionId)).toMatchObject({ until: start + 1_800_000 });

    // The session grows: automatic compression waits; nothing reaches the summarizer.
    await r.store.appendMessages([
      { session_id: sessionId, role: "user", content: words("another question", 30) },
      { session_id: sessionId, role: "assistant", content: words("another answer", 30) },
    ]);
    r.events.length = 0;
    r.deps.advance(60_000);
    expect(await r.compressor.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(1);
    expect(r.events).toEqual([
      expect.objectContaining({ type: "compression_skipped", why: "paused", until: start + 1_800_000 }),
    ]);

    // Another session is not paused.
    const other = await r.store.createSession();
    await bigSession(other);
    r.sim.script([summaryReply("Another small question.")]);
    expect(await r.compressor.compress(await input(r, other), newTurnCompressionState())).not.toBeNull();
    expect(r.sim.requests()).toHaveLength(2);

    // A provider-proven overflow is not held back by the pause.
    r.sim.script([summaryReply("The questions so far.")]);
    expect(
      await r.compressor.compress(await input(r, sessionId, "overflow"), newTurnCompressionState()),
    ).not.toBeNull();
    expect(r.sim.requests()).toHaveLength(3);

    // After the pause, automatic compression runs again.
    await r.store.appendMessages([
      { session_id: sessionId, role: "user", content: words("a later question", 30) },
      { session_id: sessionId, role: "assistant", content: words("a later answer", 30) },
      { session_id: sessionId, role: "user", content: words("the latest question", 300) },
    ]);
    r.deps.advance(1_800_000);
    r.sim.script([summaryReply("Everything until the latest question.")]);
    expect(await r.compressor.compress(await input(r, sessionId), newTurnCompressionState())).not.toBeNull();
    expect(r.sim.requests()).toHaveLength(4);
  });

  it("a summary no shorter than what it replaces is not used", async () => {
    const r = await rig({ compression: { threshold: 0.5, keep_recent: 0.45 } });
    const sessionId = await conversation(r.store, 4, 5);
    await r.store.appendMessage({ session_id: sessionId, role: "user", content: words("recent", 200) });
    r.sim.script([summaryReply(words("a rambling summary", 120))]);
    expect(await r.compressor.compress(await input(r, sessionId), newTurnCompressionState())).toBeNull();
    expect(r.sim.requests()).toHaveLength(1);
    expect(await r.store.getRecord(COMPACTION_KIND, sessionId)).toBeNull();
    expect(markers(await r.store.getMessages(sessionId))).toEqual([]);
    expect(r.events.at(-1)).toMatchObject({ type: "compression_skipped", why: "no_saving" });
    expect(await readPause(r.store, sessionId)).not.toBeNull();
  });
});

describe("needed", () => {
  it("prefers the provider's input tokens to the estimate, and is off when disabled", async () => {
    const r = await rig();
    const sessionId = await conversation(r.store, 3);
    const small = await input(r, sessionId);
    expect(r.compressor.needed(small)).toBe(false);
    expect(r.compressor.needed({ ...small, lastInputTokens: WINDOW / 2 })).toBe(true);
    expect(r.compressor.needed({ ...small, lastInputTokens: WINDOW / 2 - 1 })).toBe(false);
    const off = await rig({ compression: { enabled: false } });
    const offSession = await conversation(off.store, 9);
    expect(off.compressor.needed({ ...(await input(off, offSession)), lastInputTokens: WINDOW })).toBe(false);
    expect(await off.compressor.compress(await input(off, offSession), newTurnCompressionState())).toBeNull();
    expect(off.events).toEqual([expect.objectContaining({ type: "compression_skipped", why: "disabled" })]);
    expect(off.sim.requests()).toHaveLength(0);
  });
});
