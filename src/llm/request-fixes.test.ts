// The reasons a retry cannot clear, end to end through the real router over real HTTP: a model that
// lacks a feature falls back at once, reasoning turned off on a model that always reasons is sent
// once more with it left on, and refused replayed thinking is sent once more without it. Request
// counts, rotations and fallbacks are asserted as the simulators and the Anthropic peer saw them.
import { describe, expect, it } from "vitest";
import { startAnthropicPeer } from "../../test/helpers/anthropic-peer.js";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { err, hello, keyOf, open, recorder, rejected, runtime, sim } from "../../test/helpers/router.js";
import { withReasoningLeftOn } from "./request-fixes.js";
import type { RouteRequest } from "./router.js";

async function pair() {
  const primary = await sim();
  const backup = await sim();
  const deps = fakeDeps();
  const rt = await runtime(
    {
      model: { provider: "main", name: "echo" },
      providers: {
        main: { type: "simulator", base_url: primary.url, api_keys: ["sk-one", "sk-two"] },
        backup: { type: "simulator", base_url: backup.url, api_keys: ["sk-backup"] },
      },
      fallback: [{ provider: "backup", name: "echo" }],
      retry: { max_attempts: 4 },
    },
    deps,
  );
  return { primary, backup, deps, rt };
}

const bodyOf = (record: { body: unknown }) => record.body as Record<string, unknown>;

describe("model_incompatible: a model that lacks a feature the request needs", () => {
  it("falls back at once: one request, no retry, no other key (OpenRouter's 'no endpoints that support tool use')", async () => {
    const { primary, backup, deps, rt } = await pair();
    primary.script([
      err(
        404,
        {},
        {
          error: {
            code: 404,
            message:
              "No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing",
          },
        },
      ),
    ]);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(primary.requests().map(keyOf)).toEqual(["sk-one"]);
    expect(backup.requests()).toHaveLength(1);
    expect(deps.delays).toEqual([]);
    expect(rec.types()).toEqual(["fallback"]);
    expect(rec.status()[0]).toMatchObject({ reason: "model_incompatible" });
  });

  it("without a fallback it fails after one request, saying what the model lacks (Ollama's 'does not support tools')", async () => {
    const s = await sim();
    s.script([err(400, {}, { error: "registry.ollama.ai/library/tiny:latest does not support tools" })]);
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-one", "sk-two"] } },
      retry: { max_attempts: 4 },
    });
    const error = await rejected(rt.router.turn().complete(hello));
    expect(error.classified.reason).toBe("model_incompatible");
    expect(error.classified.message).toContain("does not support tools");
    expect(error.data.give_up).toBe("not_retryable");
    expect(s.requests()).toHaveLength(1);
    const keys = await rt.router.runtime("main").pool.state(Date.now());
    expect(keys.map((k) => k.status)).toEqual(["ok", "ok"]);
  });
});

const MANDATORY = {
  error: { code: 400, message: "Reasoning is mandatory for this endpoint and cannot be disabled." },
};

describe("reasoning_mandatory: reasoning turned off on a model that always reasons", () => {
  const reasoningOff: RouteRequest = {
    ...hello,
    extra: { reasoning: { enabled: false, exclude: true }, metadata: { run: "nightly" } },
  };

  it("is sent once more with reasoning left on, and answers; the caller's request is unchanged", async () => {
    const { primary, backup, deps, rt } = await pair();
    primary.script([err(400, {}, MANDATORY)]);
    const rec = recorder();
    const done = await rt.router.turn().complete(reasoningOff, { onEvent: rec.onEvent });
    expect(done.provider).toBe("main");
    const [first, second] = primary.requests().map(bodyOf);
    expect(first?.reasoning).toEqual({ enabled: false, exclude: true });
    // Only the field that turned it off is gone; the rest of the request is sent as it was.
    expect(second?.reasoning).toEqual({ exclude: true });
    expect(second?.metadata).toEqual({ run: "nightly" });
    expect(primary.requests()).toHaveLength(2);
    expect(backup.requests()).toHaveLength(0);
    expect(deps.delays).toEqual([]);
    expect(rec.types()).toEqual(["request_fixed"]);
    expect(rec.status()[0]).toMatchObject({ reason: "reasoning_mandatory", provider: "main", status: 400 });
    expect(reasoningOff.extra).toEqual({
      reasoning: { enabled: false, exclude: true },
      metadata: { run: "nightly" },
    });
  });

  it("falls back when the request had not turned reasoning off: nothing to change, one request", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([err(400, {}, MANDATORY)]);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(primary.requests()).toHaveLength(1);
    expect(backup.requests()).toHaveLength(1);
    expect(rec.types()).toEqual(["fallback"]);
  });

  it("falls back when the request with reasoning left on is refused too, saying so", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([err(400, {}, MANDATORY), err(400, {}, MANDATORY)]);
    const rec = recorder();
    const done = await rt.router
      .turn()
      .complete({ ...hello, extra: { reasoning_effort: "none" } }, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(primary.requests().map((r) => bodyOf(r).reasoning_effort)).toEqual(["none", undefined]);
    expect(backup.requests()).toHaveLength(1);
    expect(rec.types()).toEqual(["request_fixed", "fallback"]);
    const fallback = rec.status()[1];
    expect(fallback?.message).toContain("even with reasoning left on");
  });
});

const REPLAYED: RouteRequest = {
  messages: [
    { role: "user", content: "what is 17 * 23?" },
    {
      role: "assistant",
      content: "391",
      thinking: [
        {
          type: "thinking",
          thinking: "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51",
          signature: "c2lnLWZyb20tYW5vdGhlci1rZXk=",
        },
        { type: "redacted_thinking", data: "ZW5jcnlwdGVk" },
      ],
    },
    { role: "user", content: "and times 2?" },
  ],
};

const BAD_SIGNATURE = {
  type: "error" as const,
  status: 400,
  error_type: "invalid_request_error",
  message: "messages.1.content.0: Invalid `signature` in `thinking` block",
};

async function claude() {
  const peer = await startAnthropicPeer();
  open.push(peer);
  const backup = await sim();
  const rt = await runtime({
    model: { provider: "claude", name: "claude-test" },
    providers: {
      claude: { type: "anthropic", base_url: peer.url, api_keys: ["sk-ant-one", "sk-ant-two"] },
      backup: { type: "simulator", base_url: backup.url, api_keys: ["sk-backup"] },
    },
    fallback: [{ provider: "backup", name: "echo" }],
    retry: { max_attempts: 4 },
  });
  return { peer, backup, rt };
}

/** The block types of the replayed assistant message, as the peer received it. */
function assistantBlocks(record: { body: unknown }): string[] {
  const messages = (record.body as { messages: { role: string; content: { type: string }[] }[] }).messages;
  return messages.find((m) => m.role === "assistant")?.content.map((b) => b.type) ?? [];
}

describe("thinking_signature: replayed thinking refused", () => {
  it("is sent once more without the thinking blocks, and answers; the caller's history keeps them", async () => {
    const { peer, backup, rt } = await claude();
    peer.script([BAD_SIGNATURE]);
    const rec = recorder();
    const done = await rt.router.turn().complete(REPLAYED, { onEvent: rec.onEvent });
    expect(done.provider).toBe("claude");
    expect(peer.requests().map(assistantBlocks)).toEqual([
      ["thinking", "redacted_thinking", "text"],
      ["text"],
    ]);
    expect(backup.requests()).toHaveLength(0);
    expect(rec.types()).toEqual(["request_fixed"]);
    expect(rec.status()[0]).toMatchObject({ reason: "thinking_signature", provider: "claude" });
    const assistant = REPLAYED.messages[1];
    expect(assistant?.role === "assistant" ? assistant.thinking : null).toHaveLength(2);
  });

  it("gives up after the second refusal with a clear message: no third request, no fallback", async () => {
    const { peer, backup, rt } = await claude();
    peer.script([BAD_SIGNATURE, BAD_SIGNATURE]);
    const rec = recorder();
    const error = await rejected(rt.router.turn().complete(REPLAYED, { onEvent: rec.onEvent }));
    expect(error.classified.reason).toBe("thinking_signature");
    expect(error.classified.message).toContain(
      "refused the request again once the replayed thinking was left out",
    );
    expect(error.message).toContain("start a new session");
    expect(error.data.request_fixed).toBe(true);
    expect(peer.requests()).toHaveLength(2);
    expect(backup.requests()).toHaveLength(0);
    expect(rec.types()).toEqual(["request_fixed"]);
  });

  it("gives up at once when no thinking was replayed: nothing to strip", async () => {
    const { peer, backup, rt } = await claude();
    peer.script([BAD_SIGNATURE]);
    const error = await rejected(rt.router.turn().complete(hello));
    expect(error.classified.reason).toBe("thinking_signature");
    expect(peer.requests()).toHaveLength(1);
    expect(backup.requests()).toHaveLength(0);
  });
});

describe("withReasoningLeftOn: every documented way of turning reasoning off", () => {
  it.each([
    [{ reasoning_effort: "none" }, undefined],
    [{ reasoning: { enabled: false } }, undefined],
    [{ reasoning: { effort: "none", exclude: true } }, { reasoning: { exclude: true } }],
    [{ thinking: { type: "disabled" } }, undefined],
    [{ enable_thinking: false, seed_tag: "x" }, { seed_tag: "x" }],
    [
      { chat_template_kwargs: { enable_thinking: false, custom: 1 } },
      { chat_template_kwargs: { custom: 1 } },
    ],
    [{ think: false }, undefined],
  ])("%j is sent as %j", (extra, expected) => {
    const fixed = withReasoningLeftOn({ ...hello, extra });
    expect(fixed).not.toBeNull();
    expect(fixed?.extra).toEqual(expected);
    expect(fixed?.messages).toBe(hello.messages);
  });

  it.each([
    [undefined],
    [{ reasoning_effort: "low" }],
    [{ reasoning: { enabled: true } }],
    [{ thinking: { type: "enabled", budget_tokens: 1024 } }],
    [{ think: true }],
  ])("%j has nothing to change", (extra) => {
    expect(withReasoningLeftOn(extra === undefined ? hello : { ...hello, extra })).toBeNull();
  });
});
