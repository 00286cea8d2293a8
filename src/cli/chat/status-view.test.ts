// The chat's status view on its own, with a clock and timers that move only when told: which
// lines a sequence of events gives, on a log and on a terminal.
import { describe, expect, it } from "vitest";
import type { AgentEvent, TurnResult } from "../../agent/turn.js";
import { thrownFailure } from "../../agent/turn-failure.js";
import { ProviderError } from "../../llm/classified-error.js";
import { classify } from "../../llm/classify.js";
import { ChatView, type ViewDeps } from "./status-view.js";

const T0 = 1_700_000_000_000;
/** A color (select graphic rendition) sequence. */
const SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);

function harness(live: boolean, options: { color?: boolean; shared?: boolean } = {}) {
  let now = T0;
  let tick: (() => void) | null = null;
  const err: string[] = [];
  const out: string[] = [];
  const deps: ViewDeps = {
    now: () => now,
    every: (_ms, fn) => {
      tick = fn;
      return {
        cancel: () => {
          tick = null;
        },
      };
    },
  };
  const view = new ChatView(
    {
      write: (t) => err.push(t),
      reply: (t) => out.push(t),
      caps: { live, color: options.color ?? false },
      shared: options.shared ?? false,
      columns: () => 120,
    },
    { window: () => 128_000 },
    deps,
  );
  return {
    view,
    stderr: () => err.join(""),
    stdout: () => out.join(""),
    /** Move the clock and fire the frame timer every 100 ms on the way. */
    advance(ms: number) {
      for (let left = ms; left > 0; left -= 100) {
        now += Math.min(100, left);
        (tick as (() => void) | null)?.();
      }
    },
    ticking: () => tick !== null,
  };
}

const target = { provider: "sim", model: "echo" };

const rotated = (next: string | null): AgentEvent => ({
  type: "credential_rotated",
  layer: "credentials",
  provider: "sim",
  model: "echo",
  from: "aaaaaaaaaaaa",
  keyed: true,
  reason: "rate_limit",
  status: 429,
  verdict: "cooled",
  cooldown_until: T0 + 2000,
  cooldown_ms: 2000,
  attempt: 1,
  max_attempts: 4,
  next_key: next,
  message: `sim: key aaaaaaaaaaaa cooling down after rate_limit; ${next ? `next key ${next}` : "no other key is usable"}`,
});

const exhausted: AgentEvent = {
  type: "credentials_exhausted",
  layer: "credentials",
  provider: "sim",
  model: "echo",
  reason: "rate_limit",
  next_usable_at: T0 + 2000,
  keyed: true,
  message: "every key of sim is cooling down (rate_limit); the first is usable again in 2000 ms",
};

const retry = (over: Partial<Record<string, unknown>> = {}): AgentEvent =>
  ({
    type: "retry",
    layer: "retry",
    reason: "rate_limit",
    provider: "sim",
    model: "echo",
    attempt: 1,
    max_attempts: 4,
    elapsed_ms: 5,
    context_tokens: 321,
    retry_after_ms: 2000,
    status: null,
    message: "every key of sim is cooling down (rate_limit); the first is usable again in 2000 ms",
    delay_ms: 2100,
    next_attempt_at: T0 + 2100,
    ...over,
  }) as AgentEvent;

const result = (over: Partial<TurnResult> = {}): TurnResult => ({
  session_id: "s_1",
  turn_id: "t_1",
  status: "completed",
  reply: "hi",
  partial: false,
  finish_reason: "stop",
  error: null,
  failure: null,
  iterations: 1,
  usage: { input_tokens: 1, output_tokens: 1 },
  model: target,
  ...over,
});

const lines = (text: string) => text.split("\n").filter((l) => l !== "");

describe("ChatView on a log (no terminal)", () => {
  it("a 429 from a provider that needs no key says the server cools down, not a key", () => {
    const h = harness(false);
    h.view.beginTurn(target);
    h.view.event({ ...rotated(null), keyed: false } as AgentEvent);
    h.view.event({ ...exhausted, keyed: false } as AgentEvent);
    h.view.event(retry());
    expect(lines(h.stderr())).toEqual([
      "[retry] rate_limit (HTTP 429) from sim/echo: sim cooling down (it needs no key); attempt 2 of 4 in 2.1s, turn 0.0s, context ~321 tokens",
    ]);
  });

  it("a 429 that cools the only key and waits is one line, saying both", () => {
    const h = harness(false);
    h.view.beginTurn(target);
    h.view.event(rotated(null));
    h.view.event(exhausted);
    h.view.event(retry());
    expect(lines(h.stderr())).toEqual([
      "[retry] rate_limit (HTTP 429) from sim/echo: key aaaaaaaaaaaa cooling down, no other key usable; attempt 2 of 4 in 2.1s, turn 0.0s, context ~321 tokens",
    ]);
    h.view.text("hello");
    h.view.endTurn(result());
    expect(lines(h.stderr())).toHaveLength(1);
    expect(h.stdout()).toBe("hello\n");
  });

  it("a rotation to another key is its own line at once; held notes no retry takes are said before what follows", () => {
    const h = harness(false);
    h.view.beginTurn(target);
    h.view.event(rotated("bbbbbbbbbbbb"));
    expect(lines(h.stderr())).toEqual([
      "[credentials] sim: key aaaaaaaaaaaa cooling down after rate_limit; next key bbbbbbbbbbbb",
    ]);
    h.view.event(rotated(null));
    h.view.event({ ...exhausted, next_usable_at: null, message: "every key of sim is disabled (auth)" });
    h.view.event({
      type: "fallback",
      layer: "fallback",
      from: target,
      to: { provider: "b", model: "m" },
      reason: "auth",
      discard_chars: 0,
      message: "falling back from sim/echo to b/m",
    });
    expect(lines(h.stderr()).slice(1)).toEqual([
      "[credentials] key aaaaaaaaaaaa cooling down; every key of sim is disabled (auth)",
      "[fallback] falling back from sim/echo to b/m",
    ]);
  });

  it("tool calls: the command or path, then the result in a few words", () => {
    const h = harness(false);
    h.view.beginTurn(target);
    const started = (name: string, args: unknown): AgentEvent => ({
      type: "tool_started",
      turn_id: "t",
      id: "c",
      name,
      arguments: JSON.stringify(args),
    });
    const finished = (ok: boolean, text: string, ms = 20): AgentEvent => ({
      type: "tool_finished",
      turn_id: "t",
      id: "c",
      name: "x",
      ok: true,
      ms,
      summary: { ok, text },
    });
    h.view.event(started("terminal", { command: "ls -la" }));
    h.view.event(finished(true, "12 lines"));
    h.view.event(started("read_file", { path: "src/a.ts" }));
    h.view.event(finished(false, "exit 1: nope", 1500));
    expect(lines(h.stderr())).toEqual([
      "▸ terminal  ls -la",
      "  ✓ 12 lines",
      "▸ read_file  src/a.ts",
      "  ✗ exit 1: nope (1.5s)",
    ]);
    expect(h.stderr()).not.toContain("\x1b");
    expect(h.ticking()).toBe(false);
  });

  it("a failed turn names the layer and what to do", () => {
    const h = harness(false);
    h.view.beginTurn(target);
    const classified = classify({
      status: null,
      headers: {},
      body: null,
      transport: { code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9" },
      endpoint: "http://127.0.0.1:9/v1",
    });
    h.view.event({
      ...(retry() as Extract<AgentEvent, { type: "retry" }>),
      type: "retry_exhausted",
      reason: classified.reason,
      attempt: 4,
      elapsed_ms: 5200,
      message: classified.message,
      why: "attempts_spent",
    } as AgentEvent);
    const failure = thrownFailure(new ProviderError(classified, "sim", "echo"));
    h.view.endTurn(result({ status: "failed", reply: "", error: failure.message, failure }));
    const shown = lines(h.stderr());
    expect(shown[0]).toMatch(
      /^\[retry\] unreachable from sim\/echo: .*gave up after 4 of 4 attempts in 5\.2s/,
    );
    expect(shown[1]).toBe(
      "error: turn failed (provider layer, unreachable): sim/echo: could not connect to http://127.0.0.1:9/v1 (connection refused): is the provider running?; gave up after 4 attempts in 5.2 s",
    );
    expect(shown[2]).toMatch(/^what to do: .*providers\.sim\.base_url in config\.yaml/);
  });
});

describe("ChatView on a terminal", () => {
  it("a retry's wait is a block with a countdown redrawn in place, then the one line a log gets", () => {
    const h = harness(true, { color: true });
    h.view.beginTurn(target);
    h.view.event(rotated(null));
    h.view.event(exhausted);
    h.view.event(retry());
    h.advance(1000);
    const during = h.stderr();
    expect(during).toContain("⚠ rate_limit (HTTP 429) from sim/echo");
    expect(during).toContain("key aaaaaaaaaaaa cooling down, no other key usable");
    expect(during).toContain("context ~321 tokens of 128000 · attempt 1 of 4 failed");
    const countdown = [...during.matchAll(/next attempt in (\d+\.\d)s/g)].map((m) => Number(m[1]));
    expect(countdown[0]).toBe(2.1);
    expect(countdown.at(-1)).toBe(1.1);
    expect(countdown).toEqual([...countdown].sort((a, b) => b - a));
    // Each redraw goes back up over the block's 4 lines and erases them.
    expect(during.split("\x1b[3A\r\x1b[0J").length - 1).toBe(10);
    expect(during).not.toContain("[retry]");
    h.advance(1200);
    // The wait is over: the block is erased and the log line takes its place.
    expect(h.stderr()).toContain(
      "[retry] rate_limit (HTTP 429) from sim/echo: key aaaaaaaaaaaa cooling down",
    );
    expect(h.stderr()).toContain("\x1b[33m");
    // Then the next attempt's spinner.
    h.advance(300);
    expect(h.stderr()).toMatch(/sim\/echo, attempt 2 of 4 · 0\.\ds/);
    h.view.text("hi");
    expect(h.ticking()).toBe(false);
  });

  it("no spinner over an unfinished reply line; a status line first ends it", () => {
    const h = harness(true, { shared: true });
    h.view.beginTurn(target);
    h.view.text("Let me look");
    h.view.event({ type: "continuation", turn_id: "t", count: 1 });
    const before = h.stderr();
    h.advance(1000);
    h.view.event({
      type: "tool_started",
      turn_id: "t",
      id: "c",
      name: "terminal",
      arguments: '{"command":"echo hi"}',
    });
    // Nothing was drawn over the reply; the tool line starts on a line of its own.
    expect(before).toBe("");
    expect(h.stderr().startsWith("\n▸ terminal  echo hi\n")).toBe(true);
  });

  it("a retry's wait after part of a line of reply starts its block on a line of its own", () => {
    const h = harness(true, { shared: true });
    h.view.beginTurn(target);
    h.view.text("Let me");
    h.view.event(retry({ status: 503, reason: "overloaded", message: "busy" }));
    expect(h.stderr().startsWith("\n⚠ overloaded (HTTP 503) from sim/echo\n  busy\n")).toBe(true);
  });

  it("a turn that threw still puts the spinner away", () => {
    const h = harness(true);
    h.view.beginTurn(target);
    h.advance(500);
    expect(h.stderr()).toMatch(/sim\/echo · 0\.5s$/);
    h.view.endTurn(null);
    expect(h.ticking()).toBe(false);
    expect(h.stderr().endsWith("\r\x1b[0J")).toBe(true);
  });

  it("without colors (NO_COLOR) it still redraws, with no color codes", () => {
    const h = harness(true, { color: false });
    h.view.beginTurn(target);
    h.advance(500);
    expect(h.stderr()).toMatch(/⠋|⠙|⠹|⠸/);
    expect(h.stderr()).toContain("\r\x1b[0J");
    expect(h.stderr()).not.toMatch(SGR);
  });

  it("while an answer is typed nothing is drawn in place; the spinner comes back once it is in", () => {
    const h = harness(true);
    h.view.beginTurn(target);
    h.view.event({
      type: "tool_started",
      turn_id: "t",
      id: "c",
      name: "terminal",
      arguments: '{"command":"rm -rf ~"}',
    });
    h.advance(500);
    expect(h.stderr()).toMatch(/terminal · 0\.5s$/);
    const release = h.view.holdLive();
    // The spinner's line is erased, and the question goes where the answer follows.
    expect(h.stderr().endsWith("\r\x1b[0J")).toBe(true);
    h.view.info("approve terminal: rm -rf ~? [y] once, [n] deny");
    const asked = h.stderr();
    expect(asked.endsWith("approve terminal: rm -rf ~? [y] once, [n] deny\n")).toBe(true);
    expect(h.ticking()).toBe(false);
    h.advance(2000);
    expect(h.stderr()).toBe(asked);
    release();
    release();
    h.advance(300);
    expect(h.ticking()).toBe(true);
    expect(h.stderr().slice(asked.length)).toMatch(/terminal · 2\.8s$/);
  });
});
