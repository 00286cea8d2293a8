import { afterEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "./server.js";
import { SimulatorScriptError } from "./steps.js";

let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

function base(s: Simulator): string {
  return s.url.replace(/\/v1$/, "");
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("simulator control endpoints", () => {
  it("scripts, records and resets over HTTP", async () => {
    const s = await startSimulator();
    sim = s;
    const scripted = await post(`${base(s)}/__sim/script`, [
      { type: "error", status: 429, headers: { "retry-after-ms": "1500" } },
    ]);
    expect(scripted.status).toBe(200);
    expect(await scripted.json()).toEqual({ queued: 1 });

    const answer = await fetch(`${s.url}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer k2" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(answer.status).toBe(429);
    expect(answer.headers.get("retry-after-ms")).toBe("1500");
    expect(await answer.json()).toEqual({
      error: { message: "simulated error 429", type: "rate_limit_error", param: null, code: null },
    });

    const recorded = (await (await fetch(`${base(s)}/__sim/requests`)).json()) as {
      requests: { path: string; headers: Record<string, string>; ended: string; status: number }[];
    };
    expect(recorded.requests).toHaveLength(1);
    expect(recorded.requests[0]).toMatchObject({
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer k2" },
      ended: "completed",
      status: 429,
    });

    expect((await post(`${base(s)}/__sim/reset`, "")).status).toBe(200);
    const after = (await (await fetch(`${base(s)}/__sim/requests`)).json()) as { requests: unknown[] };
    expect(after.requests).toEqual([]);
  });

  it("refuses a bad script with a 400 that names the step and field", async () => {
    const s = await startSimulator();
    sim = s;
    const cases: [unknown, string][] = [
      [[{ type: "reply", text: "ok" }, { type: "explode" }], "step [1].type"],
      [[{ type: "error", status: 99 }], "step [0].status"],
      [
        [{ type: "hang", phase: "before_headers", after_chunks: 2 }],
        "after_chunks only applies to phase mid_stream",
      ],
      [[{ type: "reply", text: "x", extra: 1 }], "extra"],
      [[{ type: "error", status: 500, body: {}, text: "x" }], "either body (JSON) or text (raw)"],
      [{ type: "reply", text: "not in an array" }, "expected array"],
      ["{not json", "must be a JSON array"],
    ];
    for (const [body, expected] of cases) {
      const response = await post(`${base(s)}/__sim/script`, body);
      expect(response.status).toBe(400);
      const json = (await response.json()) as { error: { message: string } };
      expect(json.error.message).toContain(expected);
    }
    // Nothing from a refused script was queued.
    expect(s.queued()).toBe(0);
  });

  it("throws in-process for a bad script and queues nothing", async () => {
    const s = await startSimulator();
    sim = s;
    // @ts-expect-error a step type that does not exist
    expect(() => s.script([{ type: "reply", text: "a" }, { type: "teleport" }])).toThrow(
      SimulatorScriptError,
    );
    expect(() => s.script([{ type: "tool_calls", calls: [] }])).toThrow(/calls: .*at least 1|calls/);
    expect(s.queued()).toBe(0);
  });

  it("answers a missing body, bad JSON and an unknown route in the OpenAI error shape", async () => {
    const s = await startSimulator();
    sim = s;
    const noBody = await fetch(`${s.url}/chat/completions`, { method: "POST" });
    expect(noBody.status).toBe(400);
    expect(((await noBody.json()) as { error: { message: string } }).error.message).toBe(
      "the request has no body",
    );
    const badJson = await post(`${s.url}/chat/completions`, "{oops");
    expect(badJson.status).toBe(400);
    const noMessages = await post(`${s.url}/chat/completions`, { model: "echo" });
    expect(((await noMessages.json()) as { error: { message: string } }).error.message).toContain("messages");
    const unknown = await fetch(`${s.url}/embeddings`);
    expect(unknown.status).toBe(404);
    expect(s.requests().map((r) => r.status)).toEqual([400, 400, 400, 404]);
  });
});
