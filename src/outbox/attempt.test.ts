// One attempt through a channel, bounded by the outbox: a channel that throws, one that hangs past
// its timeout ignoring the signal, and one under way when the outbox stops each end as a retryable
// failure, never an exception or a wait without end.
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { platformChannel } from "../platforms/outbox-channel.js";
import { chatEntryInput } from "../platforms/outbox-records.js";
import { boundedAttempt } from "./attempt.js";
import { newEntry } from "./entry.js";

const chat = { platform: "fake", chat_id: "1", thread_id: null };
const { entry } = newEntry(
  chatEntryInput({ message: { type: "send", chat, text: "hi", format: "plain" } }),
  0,
);
const never = new AbortController().signal;
const op = () => ({
  ...entry,
  payload: { type: "send" as const, chat, text: "hi", format: "plain" as const },
});

describe("boundedAttempt", () => {
  it("turns a channel that throws into a retryable failure", async () => {
    const platform = new FakePlatform("fake", [
      async () => {
        throw new Error("socket hang up");
      },
    ]);
    expect(await boundedAttempt(platformChannel(platform), op(), never, 0, null)).toEqual({
      kind: "retry",
      error: "fake: socket hang up",
      retryAfterMs: null,
    });
  });

  it("does not wait past the timeout for a channel that ignores the signal", async () => {
    const platform = new FakePlatform("fake", [() => new Promise(() => {})]);
    const started = Date.now();
    const outcome = await boundedAttempt(platformChannel(platform, { timeoutMs: 50 }), op(), never, 0, null);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(outcome).toEqual({ kind: "retry", error: "fake: no answer within 50 ms", retryAfterMs: null });
  });

  it("ends an attempt under way when the outbox stops, whether or not the channel heeds it", async () => {
    const stop = new AbortController();
    let heard = false;
    const platform = new FakePlatform("fake", [
      (_op, signal) =>
        new Promise(() => {
          signal?.addEventListener("abort", () => {
            heard = true;
          });
        }),
    ]);
    const pending = boundedAttempt(
      platformChannel(platform, { timeoutMs: 60_000 }),
      op(),
      stop.signal,
      0,
      null,
    );
    stop.abort();
    expect(await pending).toEqual({
      kind: "retry",
      error: "fake: stopped before it answered",
      retryAfterMs: null,
    });
    expect(heard).toBe(true);
  });
});
