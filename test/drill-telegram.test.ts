// The drill's chat platforms row on its own, with a short outage: the Bot API down under a real
// gateway child is caught by the platforms layer (the outbox's failures on the event feed), /health
// shows it, and every message is answered once, in order. The row's judgment fails on a doctored
// observation of each thing that can go wrong: a lost answer, a duplicate, an outage /health missed.
import { beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_TELEGRAM_OUTAGE_MS,
  telegramOutageMs,
  telegramOutageScenario,
} from "../src/drill/platform-scenarios.js";
import { judgeOutage, type OutageObservation } from "../src/drill/platform-verdict.js";
import { runDrill } from "../src/drill/runner.js";
import { DRILL_SCENARIOS } from "../src/drill/scenarios.js";
import { requireBuild } from "./helpers/cli.js";

beforeAll(() => requireBuild());

const expected = ["echo: a", "echo: b", "echo: c", "echo: d"];
const good: OutageObservation = {
  outage_ms: 4_000,
  expected,
  answers: [...expected],
  sent_during: 2,
  queued_at_telegram: 2,
  model_calls: 4,
  failures_on_feed: 3,
  given_up_on_feed: 0,
  health_during: { status: "degraded", connected: false, pending: 1 },
  health_after: { status: "ok", connected: true, pending: 0 },
  drain_ms: 5_200,
};

describe("the drill's Telegram outage row", () => {
  it("is in the drill, after cron's, with the 20 s outage unless told", () => {
    const faults = DRILL_SCENARIOS.map((s) => s.fault);
    expect(faults.indexOf("the Telegram Bot API down for 20 s")).toBe(
      faults.indexOf("a missed window (the gateway was down for 3 hours)") + 1,
    );
    expect(telegramOutageMs({})).toBe(DEFAULT_TELEGRAM_OUTAGE_MS);
    expect(telegramOutageMs({ TENAX_DRILL_TELEGRAM_OUTAGE_MS: "60000" })).toBe(60_000);
    expect(() => telegramOutageMs({ TENAX_DRILL_TELEGRAM_OUTAGE_MS: "a minute" })).toThrow(
      /TENAX_DRILL_TELEGRAM_OUTAGE_MS=a minute is not a whole number of milliseconds/,
    );
    expect(telegramOutageScenario(60_000).deadline_ms).toBeGreaterThan(60_000 + 60_000);
  });

  it("passes under a real gateway, caught by platforms, every answer once and in order", async () => {
    const started = Date.now();
    const report = await runDrill([telegramOutageScenario(4_000)]);
    const row = report.rows[0];
    expect(row, row?.detail).toMatchObject({
      fault: "the Telegram Bot API down for 4 s",
      expected_layer: "platforms",
      caught_by: "platforms",
      result: "pass",
    });
    expect(typeof row?.detect_ms).toBe("number");
    expect(row?.detail).toMatch(/2 message\(s\) sent during the 4\.0 s outage \(2 waited at Telegram\)/);
    expect(row?.detail).toMatch(/4 of 4 answers delivered, in order, duplicates 0, lost 0/);
    expect(row?.detail).toMatch(/4 model call\(s\)/);
    expect(row?.detail).toMatch(
      /during: degraded \(not connected, 1 waiting\), after: ok \(connected, 0 waiting\)/,
    );
    expect(row?.detail).toMatch(/backlog drained \d+\.\d s after the lift/);
    expect(report.ok).toBe(true);
    console.log(`telegram outage row: ${Date.now() - started} ms: ${row?.detail}`);
  }, 120_000);

  it("fails when an answer cannot be delivered (Telegram refuses it with a 403 after the lift)", async () => {
    const report = await runDrill([
      telegramOutageScenario(4_000, {
        atLift: (tg) => tg.fault({ type: "error", method: "sendMessage", status: 403, times: 1 }),
      }),
    ]);
    const row = report.rows[0];
    expect(row, row?.detail).toMatchObject({ caught_by: "platforms", result: "fail" });
    expect(row?.detail).toMatch(/3 of 4 answers delivered, duplicates 0, lost 1/);
    expect(row?.detail).toMatch(/FAILED: 1 message\(s\) given up/);
    expect(report.ok).toBe(false);
  }, 120_000);

  it("the judgment passes what it should and fails each thing that can go wrong", () => {
    expect(judgeOutage(good)).toMatchObject({ ok: true });
    const bad: [string, Partial<OutageObservation>, RegExp][] = [
      [
        "a lost answer",
        { answers: expected.slice(0, 3), drain_ms: null },
        /3 of 4 answers delivered, duplicates 0, lost 1.*never drained/,
      ],
      [
        "a duplicate",
        { answers: [...expected, "echo: b"] },
        /4 of 4 answers delivered, duplicates 1, lost 0/,
      ],
      ["out of order", { answers: ["echo: a", "echo: c", "echo: b", "echo: d"] }, /FAILED: the chat holds/],
      [
        "fetched during the outage",
        { queued_at_telegram: 1 },
        /FAILED: only 1 of the 2 message\(s\) waited at Telegram/,
      ],
      ["a second model call", { model_calls: 5 }, /FAILED: 5 model call\(s\) for 4 message\(s\)/],
      ["no failure on the feed", { failures_on_feed: 0 }, /FAILED: no platform_delivery_failed/],
      ["a message given up", { given_up_on_feed: 1 }, /FAILED: 1 message\(s\) given up/],
      ["/health never showed it", { health_during: null }, /did not show the outage: never showed it/],
      [
        "/health said connected",
        { health_during: { status: "degraded", connected: true, pending: 1 } },
        /did not show the outage: degraded \(connected, 1 waiting\)/,
      ],
      [
        "a backlog left after",
        { health_after: { status: "ok", connected: true, pending: 1 } },
        /after the drain: ok \(connected, 1 waiting\)/,
      ],
    ];
    for (const [what, change, says] of bad) {
      const verdict = judgeOutage({ ...good, ...change });
      expect(verdict.ok, what).toBe(false);
      expect(verdict.detail, what).toMatch(says);
    }
  });
});
