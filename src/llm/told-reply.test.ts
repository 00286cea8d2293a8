import { describe, expect, it } from "vitest";
import type { ToolCall } from "./provider.js";
import type { RouteEvent } from "./route-events.js";
import { type ReplyEnd, ToldReply } from "./told-reply.js";

/** A listener that keeps what it is told, as an OpenAI client assembles a stream. */
class Listener {
  text = "";
  readonly calls: ToolCall[] = [];
  readonly whole: ToolCall[] = [];
  readonly logprobs: unknown[] = [];

  take(event: RouteEvent | null): void {
    if (event === null) return;
    if (event.type === "text") this.text += event.delta;
    if (event.type === "tool_call_delta") {
      const call = this.calls[event.index] ?? { id: "", name: "", arguments: "" };
      this.calls[event.index] = call;
      if (event.id) call.id = event.id;
      call.name += event.name ?? "";
      call.arguments += event.arguments;
    }
    if (event.type === "tool_call")
      this.whole.push({ id: event.id, name: event.name, arguments: event.arguments });
    if (event.type === "logprobs") this.logprobs.push(...event.content);
  }

  /** A listener that can take text back drops what it is told to. */
  drop(chars: number): void {
    this.text = this.text.slice(0, this.text.length - chars);
  }
}

/** One attempt: its events, and how it ended. */
interface Attempt {
  events: RouteEvent[];
  end: ReplyEnd;
}

const textOf = (text: string): Attempt => ({
  events: [...text].map((c) => ({ type: "text", delta: c })),
  end: { text, tool_calls: [] },
});

/**
 * The first attempt cut after `cut` events, then `second` from its start. Returns what the
 * listener has, and the call's end: its completion, or the divergence.
 */
function run(appendOnly: boolean, first: Attempt, cut: number, second: Attempt) {
  const told = new ToldReply(appendOnly);
  const listener = new Listener();
  told.begin();
  for (const event of first.events.slice(0, cut)) {
    const passed = told.pass(event);
    if ("diverged" in passed) throw new Error("a first attempt never diverges");
    listener.take(passed.event);
  }
  listener.drop(told.begin());
  for (const event of second.events) {
    const passed = told.pass(event);
    if ("diverged" in passed) return { listener, end: passed };
    listener.take(passed.event);
  }
  return { listener, end: told.settle(second.end) };
}

const reply = "echo: hello there";

describe("ToldReply, append-only: a new attempt goes on from what the listener has, or the call fails", () => {
  it("a retry that says the same again is passed on once, past what was sent, wherever the first was cut", () => {
    for (let cut = 0; cut <= reply.length; cut++) {
      const { listener, end } = run(true, textOf(reply), cut, textOf(reply));
      expect(listener.text, `cut at ${cut}`).toBe(reply);
      expect(end, `cut at ${cut}`).toEqual({ text: reply, tool_calls: [] });
    }
  });

  it("a retry that says something else fails once it passes what the two share; the listener keeps what it had", () => {
    const other = "echo: goodbye";
    for (let cut = 0; cut <= reply.length; cut++) {
      const { listener, end } = run(true, textOf(reply), cut, textOf(other));
      // Up to "echo: " the two agree: the retry goes on from there.
      if (cut <= "echo: ".length) {
        expect(listener.text, `cut at ${cut}`).toBe(other);
        expect(end).toEqual({ text: other, tool_calls: [] });
        continue;
      }
      expect(listener.text, `cut at ${cut}`).toBe(reply.slice(0, cut));
      expect(end).toEqual({
        diverged: expect.objectContaining({
          reason: "reply_diverged",
          retryable: false,
          fallback: false,
          message: expect.stringContaining(`its text differs from character 6 of the ${cut} sent`),
        }),
      });
    }
  });

  it("a retry that ends short of what was sent fails at its end", () => {
    const { listener, end } = run(true, textOf(reply), 10, textOf("echo:"));
    expect(listener.text).toBe("echo: hell");
    expect(end).toEqual({
      diverged: expect.objectContaining({
        reason: "reply_diverged",
        message: expect.stringContaining("its text ended after 5 of the 10 characters sent"),
      }),
    });
  });

  it("nothing sent before the restart: the new attempt is passed on whole, whatever it says", () => {
    const { listener, end } = run(true, textOf(reply), 0, textOf("something else"));
    expect(listener.text).toBe("something else");
    expect(end).toEqual({ text: "something else", tool_calls: [] });
  });

  it("a tool call repeated is passed on past what was sent, under the id the listener has", () => {
    const call = (id: string, args: string): Attempt => ({
      events: [
        { type: "text", delta: "ok" },
        { type: "tool_call_delta", index: 0, id, name: "get_weather", arguments: "" },
        ...[...args].map((c): RouteEvent => ({ type: "tool_call_delta", index: 0, arguments: c })),
        { type: "tool_call", id, name: "get_weather", arguments: args },
      ],
      end: { text: "ok", tool_calls: [{ id, name: "get_weather", arguments: args }] },
    });
    const args = '{"city":"Paris"}';
    const first = call("call_a", args);
    for (let cut = 0; cut <= first.events.length; cut++) {
      const { listener, end } = run(true, first, cut, call("call_b", args));
      // The id the listener has is the first attempt's once its header was sent.
      const id = cut >= 2 ? "call_a" : "call_b";
      const expected = { id, name: "get_weather", arguments: args };
      expect(listener.calls, `cut at ${cut}`).toEqual([expected]);
      expect(listener.whole, `cut at ${cut}`).toEqual([expected]);
      expect(end, `cut at ${cut}`).toEqual({ text: "ok", tool_calls: [expected] });
    }
    // Other arguments: the call fails once the listener has a part of them the retry contradicts.
    const other = run(true, first, 2 + args.length, call("call_b", '{"city":"Berlin"}'));
    expect(other.listener.calls).toEqual([{ id: "call_a", name: "get_weather", arguments: args }]);
    expect(other.end).toEqual({
      diverged: expect.objectContaining({
        message: expect.stringContaining("its tool call 0 is not the one sent"),
      }),
    });
    // Another tool: likewise.
    const renamed = run(true, first, 2, {
      ...call("call_b", args),
      events: call("call_b", args).events.map((e) =>
        e.type === "tool_call_delta" && e.name ? { ...e, name: "get_time" } : e,
      ),
    });
    expect(renamed.end).toMatchObject({ diverged: { reason: "reply_diverged" } });
  });

  it("calls are matched by their indices in order, which need not start at 0", () => {
    const call = (id: string): Attempt => ({
      events: [
        { type: "tool_call_delta", index: 3, id, name: "f", arguments: "" },
        { type: "tool_call_delta", index: 3, arguments: "{}" },
        { type: "tool_call", id, name: "f", arguments: "{}" },
      ],
      end: { text: "", tool_calls: [{ id, name: "f", arguments: "{}" }] },
    });
    const { listener, end } = run(true, call("call_a"), 1, call("call_b"));
    expect(listener.calls[3]).toEqual({ id: "call_a", name: "f", arguments: "{}" });
    expect(listener.whole).toEqual([{ id: "call_a", name: "f", arguments: "{}" }]);
    expect(end).toEqual({ text: "", tool_calls: [{ id: "call_a", name: "f", arguments: "{}" }] });
    // With no restart, the reply is the attempt's own, as the provider ended it.
    const told = new ToldReply(true);
    for (const event of call("call_c").events) told.pass(event);
    expect(told.settle(call("call_c").end)).toEqual(call("call_c").end);
  });

  it("log probabilities are judged by their tokens: the listener keeps the ones it has and gets the rest", () => {
    const withLogprobs = (value: number): Attempt => ({
      events: [...reply].flatMap((c): RouteEvent[] => [
        { type: "text", delta: c },
        { type: "logprobs", content: [{ token: c, logprob: value }] },
      ]),
      end: { text: reply, tool_calls: [], logprobs: [...reply].map((c) => ({ token: c, logprob: value })) },
    });
    const cut = 10; // five characters and their log probabilities
    const { listener, end } = run(true, withLogprobs(-1), cut, withLogprobs(-2));
    const expected = [...reply].map((c, i) => ({ token: c, logprob: i < 5 ? -1 : -2 }));
    expect(listener.text).toBe(reply);
    expect(listener.logprobs).toEqual(expected);
    expect(end).toEqual({ text: reply, tool_calls: [], logprobs: expected });
    const tokens = run(true, withLogprobs(-1), cut, {
      events: [
        { type: "text", delta: "echo" },
        { type: "logprobs", content: [{ token: "echo", logprob: -1 }] },
      ],
      end: { text: "echo", tool_calls: [] },
    });
    expect(tokens.end).toMatchObject({ diverged: { reason: "reply_diverged" } });
  });
});

describe("ToldReply, for a listener that can take text back", () => {
  it("a restart drops all the listener has of the call, and the new attempt is passed on whole", () => {
    for (let cut = 0; cut <= reply.length; cut++) {
      const { listener, end } = run(false, textOf(reply), cut, textOf("something else"));
      expect(listener.text, `cut at ${cut}`).toBe("something else");
      expect(end).toEqual({ text: "something else", tool_calls: [] });
    }
    const told = new ToldReply(false);
    told.pass({ type: "text", delta: "abc" });
    expect(told.any).toBe(true);
    expect(told.begin()).toBe(3);
    expect(told.any).toBe(false);
    expect(told.begin()).toBe(0);
  });
});
