import { describe, expect, it } from "vitest";
import { createApp } from "./app.js";

function appWithRawRoute() {
  const app = createApp({ bodyLimit: 64 });
  app.post("/raw", { config: { rawBody: true } }, async (request) => ({ text: request.body }));
  app.post("/json", { config: { jsonBody: true } }, async (request) => ({ body: request.body }));
  return app;
}

describe("a rawBody route", () => {
  it("takes a body of any media type and shape as its text", async () => {
    const app = appWithRawRoute();
    for (const [type, payload] of [
      ["text/plain;charset=UTF-8", '{"model":"m"}'],
      ["application/x-www-form-urlencoded", "{not json"],
      ["application/json", "[1,2]"],
    ] as const) {
      const answer = await app.inject({
        method: "POST",
        url: "/raw",
        headers: { "content-type": type },
        payload,
      });
      expect(answer.statusCode, type).toBe(200);
      expect(answer.json()).toEqual({ text: payload });
    }
    // The JSON route beside it still refuses what is not JSON.
    const json = await app.inject({
      method: "POST",
      url: "/json",
      headers: { "content-type": "text/plain" },
      payload: "{}",
    });
    expect(json.statusCode).toBe(415);
  });

  it("runs the handler once, with the body, when the handler takes its time", async () => {
    const app = createApp({ bodyLimit: 64 });
    const bodies: unknown[] = [];
    app.post("/raw", { config: { rawBody: true } }, async (request) => {
      bodies.push(request.body);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return { text: request.body ?? null };
    });
    const answer = await app.inject({
      method: "POST",
      url: "/raw",
      headers: { "content-type": "application/json" },
      payload: "{}",
    });
    expect(answer.json()).toEqual({ text: "{}" });
    // A second run, were there one, would have started by now.
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(bodies).toEqual(["{}"]);
  });

  it("keeps the size limit: a 413 past it", async () => {
    const app = appWithRawRoute();
    const answer = await app.inject({
      method: "POST",
      url: "/raw",
      headers: { "content-type": "text/plain" },
      payload: "x".repeat(65),
    });
    expect(answer.statusCode).toBe(413);
    expect(answer.json()).toMatchObject({ error: { code: "request_too_large" } });
  });
});
