// One attempt through an adapter: a throw, a hang past the timeout and a stop are retryable
// failures, never exceptions; a rejected format is resent as plain text within the attempt.
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { formattingRejected } from "./adapter.js";
import type { OutboxOp } from "./outbox-records.js";
import { attempt } from "./outbox-send.js";

const chat = { platform: "fake", chat_id: "1", thread_id: null };
const op: OutboxOp = { type: "send", chat, text: "*hi*", format: "markdown" };
const never = new AbortController().signal;

describe("attempt", () => {
  it("turns an adapter that throws into a retryable failure", async () => {
    const platform = new FakePlatform("fake", [
      async () => {
        throw new Error("socket hang up");
      },
    ]);
    expect(await attempt(platform, op, null, 1_000, never, "fake:1/x")).toMatchObject({
      kind: "failed",
      error: { message: "fake: socket hang up", retryable: true, retry_after_ms: null },
    });
  });

  it("does not wait past the timeout for an adapter that ignores the signal", async () => {
    const platform = new FakePlatform("fake", [() => new Promise(() => {})]);
    const started = Date.now();
    const outcome = await attempt(platform, op, null, 50, never, "fake:1/x");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(outcome).toMatchObject({
      kind: "failed",
      error: { message: "fake: no answer within 50 ms", retryable: true },
    });
  });

  it("ends an attempt under way when the outbox stops", async () => {
    const stop = new AbortController();
    const platform = new FakePlatform("fake", [
      (_op, signal) =>
        new Promise((resolve) =>
          signal?.addEventListener("abort", () =>
            resolve({
              ok: false,
              error: { message: "aborted", retryable: true, retry_after_ms: null, plain_text: false },
            }),
          ),
        ),
    ]);
    const pending = attempt(platform, op, null, 10_000, stop.signal, "fake:1/x");
    stop.abort();
    expect((await pending).kind).toBe("failed");
  });

  it("resends as plain text once, and a second refusal is the failure", async () => {
    const platform = new FakePlatform("fake", [
      formattingRejected("can't parse entities"),
      formattingRejected("no"),
    ]);
    const outcome = await attempt(platform, op, null, 1_000, never, "fake:1/x");
    expect(platform.performed.map((p) => (p.type === "send" ? p.format : ""))).toEqual(["markdown", "plain"]);
    expect(outcome).toMatchObject({
      kind: "failed",
      op: { format: "plain" },
      error: { plain_text: true, retryable: false },
    });
  });

  it("sends an edit with the message id it was given", async () => {
    const platform = new FakePlatform();
    const edit: OutboxOp = {
      type: "edit",
      chat,
      message_id: null,
      of_key: "fake:1/x",
      text: "t",
      format: "plain",
    };
    expect(await attempt(platform, edit, "77", 1_000, never, "fake:1/x")).toMatchObject({
      kind: "delivered",
      message_id: "100",
    });
    expect(platform.performed).toEqual([
      { type: "edit", chat, message_id: "77", text: "t", format: "plain", idempotency_key: "fake:1/x" },
    ]);
  });
});
