// /api/jobs on a real gateway process: create (201), the 400 that names the field, 404, 409,
// PATCH and PUT, pause and resume, runs, delete, run now (on the gateway's engine), and the key
// the gateway wants on every route.
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { expectError, type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";

beforeAll(requireBuild);

/** A gateway on a fresh simulator profile whose jobs run in Tokyo time; stopped after the test. */
async function up(): Promise<GatewayProcess> {
  const { home } = await simProfile("", "cron: { timezone: Asia/Tokyo }\ntools: { exec: { mode: full } }");
  return startGateway(home);
}

const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

interface Job {
  object: string;
  name: string;
  enabled: boolean;
  prompt: string;
  timeout_s: number | null;
  catch_up: boolean;
  next_due_at: number | null;
  schedule: { spec: string; timezone: string };
}

describe("/api/jobs", () => {
  it("creates, reads, changes, pauses, resumes and deletes a job", async () => {
    const gateway = await up();
    const created = await gateway.fetch(
      "/api/jobs",
      json("POST", { name: "digest", schedule: "0 9 * * 1-5", prompt: "summarize", timeout: 120 }),
    );
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe("/api/jobs/digest");
    const job = (await created.json()) as Job;
    expect(job).toMatchObject({ object: "job", name: "digest", enabled: true, timeout_s: 120 });
    expect(job.schedule.timezone).toBe("Asia/Tokyo");
    expect(job.next_due_at).toBeGreaterThan(Date.now());

    const list = (await (await gateway.fetch("/api/jobs")).json()) as { object: string; data: Job[] };
    expect(list.object).toBe("list");
    expect(list.data.map((j) => j.name)).toContain("digest");
    expect(((await (await gateway.fetch("/api/jobs/digest")).json()) as Job).prompt).toBe("summarize");

    const patched = await gateway.fetch(
      "/api/jobs/digest",
      json("PATCH", { prompt: "shorter", catch_up: false }),
    );
    expect(patched.status).toBe(200);
    expect((await patched.json()) as Job).toMatchObject({
      prompt: "shorter",
      catch_up: false,
      timeout_s: 120,
    });
    const put = await gateway.fetch("/api/jobs/digest", json("PUT", { schedule: "every 2h", timeout: null }));
    expect((await put.json()) as Job).toMatchObject({ schedule: { spec: "every 2h" }, timeout_s: null });

    const paused = (await (await gateway.fetch("/api/jobs/digest/pause", { method: "POST" })).json()) as Job;
    expect(paused).toMatchObject({ enabled: false, next_due_at: null });
    const resumed = (await (
      await gateway.fetch("/api/jobs/digest/resume", { method: "POST" })
    ).json()) as Job;
    expect(resumed.enabled).toBe(true);
    expect(resumed.next_due_at).toBeGreaterThan(Date.now());

    const runs = await gateway.fetch("/api/jobs/digest/runs?limit=5");
    expect(await runs.json()).toEqual({ object: "list", data: [] });
    await expectError(await gateway.fetch("/api/jobs/digest/runs?limit=0"), 400, "invalid_query");

    // Run now: claimed and started on the gateway's engine, then listed with its reply.
    const run = await gateway.fetch("/api/jobs/digest/run", { method: "POST" });
    expect(run.status).toBe(202);
    const started = (await run.json()) as { run_key: string; trigger: string };
    expect(started.trigger).toBe("manual");
    let listed: { run_key: string; state: string; reply: string | null }[] = [];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      listed = ((await (await gateway.fetch("/api/jobs/digest/runs")).json()) as { data: typeof listed })
        .data;
      if (listed[0]?.state === "ok") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed.map((r) => [r.run_key, r.state])).toEqual([[started.run_key, "ok"]]);

    const deleted = await gateway.fetch("/api/jobs/digest", { method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toMatchObject({ name: "digest", deleted: true });
    await expectError(await gateway.fetch("/api/jobs/digest"), 404, "job_not_found");
  }, 30_000);

  it("answers bad input with 400 naming the field, 404 for no such job, 409 for a name taken", async () => {
    const gateway = await up();
    const typed = await expectError(
      await gateway.fetch("/api/jobs", json("POST", { name: "a", schedule: 5, prompt: "x" })),
      400,
      "invalid_field",
    );
    expect(typed.message).toMatch(/^schedule: /);
    expect((typed as { param?: string }).param).toBe("schedule");
    const unknown = await expectError(
      await gateway.fetch(
        "/api/jobs",
        json("POST", { name: "a", schedule: "every 1h", prompt: "x", when: 1 }),
      ),
      400,
      "unknown_field",
    );
    expect(unknown.message).toMatch(/when/);
    const schedule = await expectError(
      await gateway.fetch("/api/jobs", json("POST", { name: "a", schedule: "every 10s", prompt: "x" })),
      400,
      "job_invalid",
    );
    expect(schedule.message).toMatch(/"every 10s" is shorter than a minute/);
    const model = await expectError(
      await gateway.fetch(
        "/api/jobs",
        json("POST", { name: "a", schedule: "every 1h", prompt: "x", model: "sim/big" }),
      ),
      400,
      "job_invalid",
    );
    expect(model.message).toMatch(/"big" is not a model of provider sim \(its models: echo\)/);

    for (const [method, path] of [
      ["GET", "/api/jobs/nope"],
      ["PATCH", "/api/jobs/nope"],
      ["DELETE", "/api/jobs/nope"],
      ["POST", "/api/jobs/nope/pause"],
      ["GET", "/api/jobs/nope/runs"],
      ["POST", "/api/jobs/nope/run"],
    ] as const) {
      const init = method === "PATCH" ? json("PATCH", { prompt: "y" }) : { method };
      const error = await expectError(await gateway.fetch(path, init), 404, "job_not_found");
      expect(error.message).toMatch(/there is no cron job named "nope"/);
    }

    const body = { name: "twice", schedule: "every 1h", prompt: "x" };
    expect((await gateway.fetch("/api/jobs", json("POST", body))).status).toBe(201);
    const taken = await expectError(await gateway.fetch("/api/jobs", json("POST", body)), 409, "job_exists");
    expect(taken.type).toBe("conflict_error");
  }, 30_000);

  it("refuses every route without the key", async () => {
    const gateway = await up();
    expect(
      (await gateway.fetch("/api/jobs", json("POST", { name: "twice", schedule: "every 1h", prompt: "x" })))
        .status,
    ).toBe(201);
    for (const [method, path] of [
      ["GET", "/api/jobs"],
      ["POST", "/api/jobs"],
      ["GET", "/api/jobs/twice"],
      ["DELETE", "/api/jobs/twice"],
      ["POST", "/api/jobs/twice/run"],
    ] as const) {
      const response = await gateway.fetch(path, { method, headers: { authorization: "" } });
      await expectError(response, 401, "invalid_api_key");
    }
    // Nothing was deleted by the refused DELETE.
    expect((await gateway.fetch("/api/jobs/twice")).status).toBe(200);
  }, 30_000);
});
