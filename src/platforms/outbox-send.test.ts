// One attempt through an adapter: a rejected format is resent as plain text within the attempt,
// and an edit goes with the message id it was given. (Throws, hangs and stops are the outbox's
// to bound: src/outbox/attempt.test.ts.)
import { describe, expect, it } from "vitest";
import { FakePlatform } from "../../test/helpers/fake-platform.js";
import { formattingRejected } from "./adapter.js";
import type { OutboxOp } from "./outbox-records.js";
import { attempt } from "./outbox-send.js";

const chat = { platform: "fake", chat_id: "1", thread_id: null };
const op: OutboxOp = { type: "send", chat, text: "*hi*", format: "markdown" };
const never = new AbortController().signal;

describe("attempt", () => {
  it("resends as plain text once, and a second refusal is the failure", async () => {
    const platform = new FakePlatform("fake", [
      formattingRejected("can't parse entities"),
      formattingRejected("no"),
    ]);
    const outcome = await attempt(platform, op, null, never, "fake:1/x");
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
    expect(await attempt(platform, edit, "77", never, "fake:1/x")).toMatchObject({
      kind: "delivered",
      message_id: "100",
    });
    expect(platform.performed).toEqual([
      { type: "edit", chat, message_id: "77", text: "t", format: "plain", idempotency_key: "fake:1/x" },
    ]);
  });
});
