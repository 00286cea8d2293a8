import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { Redactor } from "../core/redact.js";
import { type AuditRecord, AuditTrail, auditRecord } from "./audit-trail.js";
import type { AgentEvent } from "./events.js";

const AT = Date.UTC(2026, 11, 5, 3, 0, 0);

function trail(redactor?: Redactor) {
  const file = join(tempDir(), "logs", "events.jsonl");
  const t = new AuditTrail(file, {
    source: "chat",
    maxBytes: 100_000,
    keep: 1,
    now: () => AT,
    ...(redactor ? { redactor } : {}),
  });
  const lines = () =>
    readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as AuditRecord);
  return { t, lines };
}

const retry: AgentEvent = {
  type: "retry",
  layer: "retry",
  reason: "server_error",
  provider: "sim",
  model: "echo",
  attempt: 2,
  max_attempts: 4,
  elapsed_ms: 1500,
  context_tokens: 1833,
  retry_after_ms: null,
  status: 503,
  message: "simulated error 503",
  delay_ms: 700,
  next_attempt_at: AT + 700,
};

describe("the audit trail", () => {
  it("writes a retry with the fields people filter on at the top, and the turn that was running", () => {
    const { t, lines } = trail();
    t.turnEvent("s_1", { type: "turn_started", session_id: "s_1", turn_id: "t_1" });
    t.turnEvent("s_1", retry);
    t.turnEvent("s_1", {
      type: "turn_finished",
      turn_id: "t_1",
      status: "failed",
      partial: false,
      error: "sim/echo gave up",
      failure: {
        code: "server_error",
        layer: "retry",
        message: "sim/echo gave up",
        next: "try later",
        retry_after_ms: null,
        classified: null,
        target: { provider: "sim", model: "echo" },
      },
    });
    // A retry of the same session after the turn ended is not given the ended turn's id.
    t.turnEvent("s_1", retry);
    const [first, finished, after] = lines();
    expect(first).toEqual({
      time: "2026-12-05T03:00:00.000Z",
      layer: "retry",
      type: "retry",
      session_id: "s_1",
      turn_id: "t_1",
      provider: "sim",
      model: "echo",
      reason: "server_error",
      attempt: 2,
      max_attempts: 4,
      delay_ms: 700,
      elapsed_ms: 1500,
      context_tokens: 1833,
      message: "simulated error 503",
      source: "chat",
      pid: process.pid,
      data: { retry_after_ms: null, status: 503, next_attempt_at: AT + 700 },
    });
    // The start is not a line; the end says who gave up and why.
    expect(finished).toMatchObject({
      layer: "agent",
      type: "turn_finished",
      turn_id: "t_1",
      provider: "sim",
      model: "echo",
      reason: "server_error",
    });
    expect(after?.turn_id).toBeUndefined();
    expect(lines()).toHaveLength(3);
  });

  it("leaves out a turn that went well with nothing on the way, and keeps one that had a retry", () => {
    const { t, lines } = trail();
    const done = (turn_id: string) =>
      t.turnEvent("s_1", {
        type: "turn_finished",
        turn_id,
        status: "completed",
        partial: false,
        error: null,
        failure: null,
      });
    t.turnEvent("s_1", { type: "turn_started", session_id: "s_1", turn_id: "t_quiet" });
    done("t_quiet");
    t.turnEvent("s_1", { type: "turn_started", session_id: "s_1", turn_id: "t_retried" });
    t.turnEvent("s_1", retry);
    done("t_retried");
    expect(lines().map((l) => [l.type, l.turn_id])).toEqual([
      ["retry", "t_retried"],
      ["turn_finished", "t_retried"],
    ]);
  });

  it("records any event by its type and layer: a new kind needs no change here", () => {
    // As another layer might publish it (not in today's union): written all the same.
    const record = auditRecord(
      {
        type: "breaker_opened",
        layer: "breaker",
        session_id: null,
        message: "sim/echo: circuit open after 5 failures",
        data: { provider: "sim", model: "echo", failures: 5, cool_down_ms: 30_000 },
      },
      AT,
      "gateway",
    );
    expect(record).toMatchObject({
      layer: "breaker",
      type: "breaker_opened",
      provider: "sim",
      model: "echo",
      data: { failures: 5, cool_down_ms: 30_000 },
    });
    // A fallback names the model that failed; a store fault its path.
    expect(
      auditRecord(
        {
          type: "fallback",
          layer: "fallback",
          session_id: "s_2",
          message: "falling back",
          data: {
            from: { provider: "a", model: "m1" },
            to: { provider: "b", model: "m2" },
            reason: "server_error",
            discard_chars: 0,
          },
        },
        AT,
        "cron",
      ),
    ).toMatchObject({ provider: "a", model: "m1", reason: "server_error", data: { to: { provider: "b" } } });
    expect(auditRecord({ type: "turn_started", layer: "agent", session_id: "s" }, AT, "chat")).toBeNull();
  });

  it("redacts the profile's secrets by value wherever they are in the event", () => {
    const secret = "sk-proj-0123456789abcdef";
    const { t, lines } = trail(new Redactor([{ name: "providers.sim.api_keys[0]", value: secret }]));
    t.turnEvent("s_1", { ...retry, message: `401 for key ${secret}` });
    t.record({
      type: "store.corrupt",
      layer: "store",
      message: "corrupt",
      data: { detail: `url ${secret}` },
    });
    const text = JSON.stringify(lines());
    expect(text).not.toContain(secret);
    expect(lines()[0]?.message).toBe("401 for key [redacted:providers.sim.api_keys[0]]");
  });

  it("cuts a huge string, so one event never makes a huge line", () => {
    const { t, lines } = trail();
    t.turnEvent("s_1", { ...retry, message: "x".repeat(50_000) });
    const [line] = lines();
    expect(line?.message.length).toBeLessThan(2_100);
    expect(line?.message).toContain("(50000 characters)");
  });
});
