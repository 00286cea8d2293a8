// The durable audit trail from outside: a real `tenax gateway run` retrying a simulator's 503s
// writes each retry to logs/events.jsonl as it happens, `tenax events --follow` prints them as they
// come, and after the gateway has stopped `tenax events` still lists them from the file, with
// `tenax chat`'s own retries beside them.
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, ROOT, requireBuild, tenaxAsync } from "./helpers/cli.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

interface Line {
  time: string;
  layer: string;
  type: string;
  session_id: string | null;
  turn_id?: string;
  provider?: string;
  model?: string;
  reason?: string;
  attempt?: number;
  max_attempts?: number;
  delay_ms?: number;
  source: string;
}

const unavailable = (headers: Record<string, string> = {}) => ({
  type: "error" as const,
  status: 503,
  headers,
  body: { error: { message: "upstream failure" } },
});

describe("tenax events", () => {
  it("lists each retry of a gateway turn after the gateway stopped, with provider, model, attempt and delay", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    // Followed from before the turn: each line is printed as the gateway writes it.
    const follower = spawn(process.execPath, [BIN, "events", "--follow", "--json", "--layer", "retry"], {
      cwd: ROOT,
      env: cliEnvironment(home),
    });
    let followed = "";
    follower.stdout.setEncoding("utf8").on("data", (c: string) => {
      followed += c;
    });
    const followerExit = new Promise<number | null>((resolve) =>
      follower.on("exit", (code) => resolve(code)),
    );
    sim.script([unavailable(), unavailable()]);
    const response = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "hello" }] }),
    });
    expect(response.status).toBe(200);
    const sessionId = response.headers.get("x-session-id");
    await until(() => followed.trim().split("\n").filter(Boolean).length >= 2);
    follower.kill("SIGINT");
    expect(await followerExit).toBe(0);
    const live = followed
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Line);
    expect(live.map((l) => [l.type, l.attempt])).toEqual([
      ["retry", 1],
      ["retry", 2],
    ]);

    // A direct model call (`model: PROVIDER/NAME`, the client's own tools) is audited too.
    sim.script([unavailable()]);
    const direct = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim/echo", messages: [{ role: "user", content: "direct" }] }),
    });
    expect(direct.status).toBe(200);
    const directSession = direct.headers.get("x-session-id");

    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    // `tenax chat` writes its own retries to the same trail.
    sim.script([unavailable()]);
    const chat = await tenaxAsync(home, ["chat", "-q", "again", "--json"]);
    expect(chat.status).toBe(0);
    const chatSession = (JSON.parse(chat.stdout) as { session_id: string }).session_id;

    const listed = await tenaxAsync(home, ["events", "--layer", "retry", "--json"]);
    expect(listed.status).toBe(0);
    const retries = JSON.parse(listed.stdout) as Line[];
    const fromGateway = retries.filter((r) => r.source === "gateway" && r.session_id === sessionId);
    expect(fromGateway).toHaveLength(2);
    for (const [i, r] of fromGateway.entries()) {
      expect(r).toMatchObject({
        layer: "retry",
        type: "retry",
        session_id: sessionId,
        provider: "sim",
        model: "echo",
        reason: "server_error",
        attempt: i + 1,
        max_attempts: 4,
      });
      expect(r.turn_id).toMatch(/^t_/);
      // The server-error backoff: within [500, 1000] ms for the first retry, doubled for the next.
      expect(r.delay_ms).toBeGreaterThanOrEqual(500 * 2 ** i);
      expect(r.delay_ms).toBeLessThanOrEqual(1000 * 2 ** i);
    }
    expect(retries.filter((r) => r.source === "chat").map((r) => r.session_id)).toEqual([chatSession]);
    expect(retries.filter((r) => r.session_id === directSession)).toMatchObject([
      { source: "gateway", provider: "sim", model: "echo", attempt: 1 },
    ]);

    // For people: one line per event, filtered by session; the whole turn's story in order.
    const human = await tenaxAsync(home, ["events", "--session", sessionId ?? "?"]);
    expect(human.status).toBe(0);
    const lines = human.stdout.trim().split("\n");
    expect(lines.map((l) => l.split(/\s{2,}/).slice(1, 3))).toEqual([
      ["retry", "retry"],
      ["retry", "retry"],
      ["agent", "turn_finished"],
    ]);
    expect(lines[1]).toContain(`[sim/echo, attempt 2/4, delay ${fromGateway[1]?.delay_ms}ms`);

    const bad = await tenaxAsync(home, ["events", "--since", "yesterday"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--since");
    expect(bad.stderr).toContain("--since 1h");
  });
});
