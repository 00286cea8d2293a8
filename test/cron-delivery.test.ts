// Cron delivery with real processes and a real webhook receiver: a webhook that fails twice and
// then takes the run receives it once, also when more passes come after; a job that fails three
// runs in a row notifies once when it starts failing and once when it recovers, with the streak.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { addJob, runsOf } from "./helpers/cron.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

interface Received {
  key: string;
  body: { type: string; kind?: string; run_key?: string; streak?: number; state?: string; text?: string };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A webhook receiver answering each POST with the next status of `statuses`, then 200 (a 503 asks for a retry in a second). */
async function receiver(statuses: number[] = []) {
  const received: Received[] = [];
  const attempts: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.setEncoding("utf8").on("data", (c: string) => {
      text += c;
    });
    req.on("end", () => {
      const key = String(req.headers["idempotency-key"] ?? "");
      attempts.push(key);
      const status = statuses.shift() ?? 200;
      if (status === 200) received.push({ key, body: JSON.parse(text) as Received["body"] });
      res.writeHead(status, status === 503 ? { "retry-after": "1" } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?token=s3cret`;
  return { url, received, attempts };
}

describe("cron delivery", () => {
  it("a webhook that fails twice and then takes the run receives it once", async () => {
    const { paths, home } = await simProfile();
    const hook = await receiver([503, 503]);
    const gateway = await startGateway(home);
    await addJob(paths, "digest", "delivery-once", 1_500, { deliver: `webhook:${hook.url}` });
    await until(() => hook.received.length === 1, 30_000);
    const [run] = await runsOf(paths, "digest");
    expect(run?.state).toBe("ok");
    expect(hook.received[0]?.body).toMatchObject({ type: "cron.run", run_key: run?.run_key, state: "ok" });
    expect(hook.attempts).toEqual([
      `${run?.run_key}/result`,
      `${run?.run_key}/result`,
      `${run?.run_key}/result`,
    ]);
    // The gateway's outbox passes every 5 s: another pass and a tick send nothing again.
    await new Promise((r) => setTimeout(r, 6_000));
    const tick = await tenaxAsync(home, ["cron", "tick"]);
    expect(tick.status).toBe(0);
    expect(hook.attempts).toHaveLength(3);
    // The webhook's path and token are never in what the gateway printed.
    expect(gateway.stdout() + gateway.stderr()).not.toContain("s3cret");
    gateway.child.kill("SIGTERM");
    await gateway.exited;
  }, 60_000);

  it("a job failing three runs in a row notifies once when it starts failing and once when it recovers", async () => {
    const { sim, paths, home } = await simProfile();
    const hook = await receiver();
    const bad = {
      type: "error" as const,
      status: 400,
      body: { error: { message: "bad request", type: "invalid_request_error" } },
    };
    sim.script([bad, bad, bad, { type: "reply", text: "fine again" }, { type: "reply", text: "still fine" }]);
    // Due in 50 s: nothing ticks meanwhile, so only the manual runs below run.
    await addJob(paths, "flaky", "notify-once", 50_000, { deliver: `webhook:${hook.url}` });
    const states: string[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await tenaxAsync(home, ["cron", "run", "flaky", "--json"]);
      states.push((JSON.parse(run.stdout) as { run: { state: string } }).run.state);
    }
    expect(states).toEqual(["failed", "failed", "failed", "ok", "ok"]);
    const notices = hook.received
      .filter((r) => r.body.type === "cron.notice")
      .map((r) => [r.body.kind, r.body.streak]);
    expect(notices).toEqual([
      ["failing", 1],
      ["recovered", 3],
    ]);
    // Every run's result was delivered too, each once.
    const results = hook.received.filter((r) => r.body.type === "cron.run");
    expect(results).toHaveLength(5);
    expect(new Set(results.map((r) => r.key)).size).toBe(5);
    expect(await runsOf(paths, "flaky")).toHaveLength(5);
  }, 90_000);
});
