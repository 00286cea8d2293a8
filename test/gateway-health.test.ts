// The gateway's health model from outside, against a real `tenax gateway run` process: /health with
// every layer and the age of each result, answering while a provider hangs; /metrics in the
// Prometheus text format; /api/events as SSE resumable with Last-Event-ID; and logs/gateway.log
// rotating at its size limit.
import { appendFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { writeFailingJob } from "./helpers/cron.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

interface Health {
  status: string;
  components: Record<
    string,
    { status: string; detail: string; checked_at: number | null; age_ms: number | null }
  >;
}

const chat = (gw: GatewayProcess, content: string, headers: Record<string, string> = {}) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });

interface SseEvent {
  id: string | null;
  event: string | null;
  data: { id: number; type: string; layer: string | null; message: string; session_id: string | null };
}

/** Follow an SSE stream, collecting events until `stop` aborts it. */
function follow(url: string, headers: Record<string, string>, stop: AbortSignal) {
  const events: SseEvent[] = [];
  const done = (async () => {
    const response = await fetch(url, { headers, signal: stop });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done: end } = (await reader?.read()) ?? { done: true, value: undefined };
        if (end) break;
        buffer += decoder.decode(value, { stream: true });
        let cut = buffer.indexOf("\n\n");
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const field = (name: string) =>
            block
              .split("\n")
              .find((l) => l.startsWith(`${name}: `))
              ?.slice(name.length + 2) ?? null;
          const data = field("data");
          if (data !== null) events.push({ id: field("id"), event: field("event"), data: JSON.parse(data) });
          cut = buffer.indexOf("\n\n");
        }
      }
    } catch (error) {
      // The gateway ending the stream as it stops is an end, not a failure.
      if (!stop.aborted && !String((error as Error).cause ?? error).includes("other side closed"))
        throw error;
    }
  })();
  return { events, done };
}

describe("the gateway's health, metrics and events", () => {
  it("/health names every layer with the age of its check, and answers while a provider hangs", async () => {
    const { home, sim } = await simProfile("drain_timeout: 1");
    const gw = await startGateway(home);
    const caps = (await (await gw.fetch(`/api/capabilities`)).json()) as { capabilities: string[] };
    expect(caps.capabilities).toEqual(expect.arrayContaining(["health", "metrics", "events"]));
    let health: Health = { status: "", components: {} };
    // The first background check lands shortly after start.
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      health = (await (await gw.fetch(`/health`)).json()) as Health;
      if (health.status === "ok") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(health.status).toBe("ok");
    expect(Object.keys(health.components).sort()).toEqual(
      [
        "compression",
        "credentials",
        "cron",
        "disk",
        "gateway",
        "instances",
        "mcp",
        "platforms",
        "providers",
        "scheduler",
        "store",
        "tools",
        "turns",
      ].sort(),
    );
    for (const c of Object.values(health.components)) {
      expect(c.status).toBe("ok");
      expect(c.detail.length).toBeGreaterThan(5);
      expect(c.age_ms).toBeGreaterThanOrEqual(0);
    }

    sim.script([{ type: "hang", phase: "before_headers" }]);
    const hung = chat(gw, "this one hangs at the provider");
    await until(() => sim.requests().length === 1);
    const started = Date.now();
    const during = await gw.fetch(`/health`);
    const took = Date.now() - started;
    expect(during.status).toBe(200);
    const body = (await during.json()) as Health & { components: { gateway: { detail: string } } };
    expect(body.components.gateway.detail).toContain("1 of at most 16 turns running");
    // Generous for a shared machine: the point is that it does not wait for the hung call
    // (bench/ measures the real figure).
    expect(took).toBeLessThan(2000);
    gw.child.kill("SIGTERM");
    await hung.catch(() => {});
    expect(await gw.exited).toBe(0);
  });

  it("/metrics is Prometheus text that counts turns, responses and each layer's status", async () => {
    const { home } = await simProfile();
    const gw = await startGateway(home);
    expect((await chat(gw, "one")).status).toBe(200);
    expect((await chat(gw, "two")).status).toBe(200);
    const response = await gw.fetch(`/metrics`);
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await response.text();
    for (const line of text.trim().split("\n")) {
      if (line.startsWith("#")) expect(line).toMatch(/^# (HELP|TYPE) tenax_[a-z_]+ .+$/);
      else expect(line).toMatch(/^tenax_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+]+$/);
    }
    expect(text).toContain('tenax_turns_total{status="completed"} 2');
    expect(text).toContain('tenax_http_responses_total{route="/v1/chat/completions",code="200"} 2');
    expect(text).toMatch(/tenax_component_status\{component="store"\} [012]/);
    expect(text).toContain("tenax_turns_in_flight 0");
  });

  it("/health has a cron component naming a failing job, and /metrics has its per-job figures", async () => {
    const { home, paths } = await simProfile();
    await writeFailingJob(paths, "nightly-report", "rate_limit: the provider refused (429)");
    const gw = await startGateway(home);
    const health = (await (await gw.fetch("/health")).json()) as {
      status: string;
      components: Record<string, Record<string, unknown>>;
    };
    expect(health.status).toBe("degraded");
    expect(health.components.cron).toMatchObject({
      status: "degraded",
      next: "tenax cron runs nightly-report",
      jobs: 1,
      enabled: 1,
      failing: [{ job: "nightly-report", streak: 3, last_error: "rate_limit: the provider refused (429)" }],
      outbox: { pending: 0, given_up: 0 },
      // The engine's own numbers: it runs in this gateway.
      lag_ms: { samples: expect.any(Number) },
      running: 0,
      queued: 0,
      age_ms: 0,
    });
    expect(health.components.cron?.detail).toMatch(
      /^nightly-report failed 3 runs in a row since .+ \(last error: rate_limit: the provider refused \(429\)\)$/,
    );
    const text = await (await gw.fetch("/metrics")).text();
    expect(text).toContain("# TYPE tenax_cron_job_failure_streak gauge");
    expect(text).toContain('tenax_cron_job_failure_streak{job="nightly-report"} 3');
    expect(text).toContain('tenax_cron_job_enabled{job="nightly-report"} 1');
    // The engine runs in this gateway: runs are counted by it (none yet), not read from the store.
    expect(text).toContain("# TYPE tenax_cron_job_runs_total counter");
    expect(text).not.toContain('tenax_cron_job_runs_total{job="nightly-report"');
    expect(text).toMatch(/tenax_cron_job_next_due_timestamp_seconds\{job="nightly-report"\} \d+/);
    expect(text).toContain("tenax_cron_outbox_given_up 0");
    expect(text).toContain('tenax_component_status{component="cron"} 1');
    for (const line of text.trim().split("\n")) {
      if (line.startsWith("#")) expect(line).toMatch(/^# (HELP|TYPE) tenax_[a-z_]+ .+$/);
      else expect(line).toMatch(/^tenax_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+]+$/);
    }
  });

  it("/api/events streams each layer's events, resumes after Last-Event-ID, and says when the gateway stops", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const first = new AbortController();
    const live = follow(`${gw.url}/api/events`, gw.auth, first.signal);
    await until(() => live.events.length >= 1); // gateway_started, held in the ring
    sim.script([
      {
        type: "error",
        status: 429,
        headers: { "retry-after": "0" },
        body: { error: { message: "slow down" } },
      },
    ]);
    expect((await chat(gw, "retried once")).status).toBe(200);
    await until(() => live.events.some((e) => e.data.type === "turn_finished"));
    const types = live.events.map((e) => e.data.type);
    // The 429 is caught by the key pool: the key cools down and the call goes on.
    expect(types).toEqual(["gateway_started", "turn_started", "credential_rotated", "turn_finished"]);
    const caught = live.events.find((e) => e.data.type === "credential_rotated");
    expect(caught?.data.layer).toBe("credentials");
    expect(caught?.data.message).toContain("rate_limit");
    expect(caught?.data.session_id).toMatch(/^s_/);
    const ids = live.events.map((e) => Number(e.id));
    expect(ids).toEqual(ids.map((_, i) => (ids[0] ?? 0) + i));
    first.abort();
    await live.done;

    // A client that reconnects with the last id it saw gets exactly what came after it.
    const seen = live.events[1]?.id ?? "";
    const again = new AbortController();
    const resumed = follow(`${gw.url}/api/events`, { ...gw.auth, "last-event-id": seen }, again.signal);
    await until(() => resumed.events.length >= live.events.length - 2);
    expect(resumed.events.map((e) => e.id)).toEqual(live.events.slice(2).map((e) => e.id));

    gw.child.kill("SIGTERM");
    await until(() => resumed.events.some((e) => e.data.type === "shutdown"));
    expect(resumed.events.at(-1)?.data.layer).toBe("lifecycle");
    expect(await gw.exited).toBe(0);
    await resumed.done;
  });

  it("a store damaged under the gateway: the write is refused with a 503 naming the store, and /health says store down", async () => {
    const { home, paths } = await simProfile();
    const gw = await startGateway(home);
    for (let i = 0; i < 5; i++) expect((await chat(gw, `before the damage ${i}`)).status).toBe(200);
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "sqlite_autoindex_messages_1").map((p) => p.pageno),
      "garbage",
      3,
    );
    const refused = await chat(gw, "during the damage");
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("store_unavailable");
    expect(body.error.message).toContain("store_corrupt");
    expect(body.error.message).toContain(`tenax sessions recover --source ${paths.state}`);
    // The new session's first write was refused: there is no session to name.
    expect(refused.headers.get("x-session-id")).toBeNull();
    await until(
      () => existsSync(join(paths.dir, "spool")) && readdirSync(join(paths.dir, "spool")).length > 0,
    );
    const health = (await (await gw.fetch(`/health`)).json()) as Health;
    expect(health.status).toBe("down");
    expect(health.components.store?.status).toBe("down");
  });

  it("with gateway.api_key, /health, /metrics and /api/events need it; /health/live does not", async () => {
    const { home } = await simProfile('api_key: "k-123"');
    const gw = await startGateway(home);
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
    for (const path of ["/health", "/metrics", "/api/events"]) {
      expect((await fetch(`${gw.url}${path}`)).status).toBe(401);
    }
    expect((await fetch(`${gw.url}/health`, { headers: { authorization: "Bearer k-123" } })).status).not.toBe(
      401,
    );
    expect(
      (await fetch(`${gw.url}/health`, { method: "POST", headers: { authorization: "Bearer k-123" } }))
        .status,
    ).toBe(405);
  });

  it("logs/gateway.log and the audit trail rotate at logs.max_mb and keep logs.keep old files", async () => {
    const { home, paths, sim } = await simProfile();
    appendFileSync(paths.config, "logs: { max_mb: 0.002, keep: 1 }\n");
    // A quiet turn writes no audit line: six 503s, each answered by the retry after it, give the
    // trail six retries (and their turns' ends), more than one 2 KiB file holds.
    sim.script(
      Array.from({ length: 6 }, (_, i) => [
        { type: "error" as const, status: 503 },
        { type: "reply" as const, text: `answer ${i}` },
      ]).flat(),
    );
    const gw = await startGateway(home);
    for (let i = 0; i < 12; i++) expect((await chat(gw, `turn ${i}`)).status).toBe(200);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    const logs = join(paths.dir, "logs");
    expect(readdirSync(logs).sort()).toEqual([
      "events.jsonl",
      "events.jsonl.1",
      "gateway.log",
      "gateway.log.1",
    ]);
    for (const name of readdirSync(logs))
      expect(statSync(join(logs, name)).size).toBeLessThanOrEqual(0.002 * 1024 * 1024);
    expect(existsSync(join(logs, "gateway.log.2"))).toBe(false);
    expect(existsSync(join(logs, "events.jsonl.2"))).toBe(false);
  });
});
