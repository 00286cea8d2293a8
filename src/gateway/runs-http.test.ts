// The runs routes in-process over a real socket, with hand-driven turns: an idle event stream
// sends `: keepalive` comments, then carries the live events and ends after `run.finished`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FakeGateway } from "../../test/helpers/fake-gateway.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openStore } from "../store/registry.js";
import { sendError, toGatewayError } from "./http-error.js";
import { RunRegistry } from "./runs.js";
import { runRoutes } from "./runs-http.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve() {
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  const gateway = new FakeGateway(store);
  const routes = runRoutes(new RunRegistry({ store, gateway }), { keepaliveMs: 20 });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://test");
    routes(req, res, url.pathname, url)
      .then((served) => {
        if (!served) res.writeHead(404).end();
      })
      .catch((error: unknown) => sendError(res, toGatewayError(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { gateway, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("runs routes", () => {
  it("keeps an idle event stream alive, then follows it live to run.finished and ends it", async () => {
    const { gateway, url } = await serve();
    const posted = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
    });
    expect(posted.status).toBe(202);
    const run = (await posted.json()) as { run_id: string; session_id: string };
    const response = await fetch(`${url}/v1/runs/${run.run_id}/events`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    while ((text.match(/^: keepalive$/gm) ?? []).length < 2) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early:\n${text}`);
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain("id: 1\nevent: run.started\n");
    gateway.say(run.session_id, "hello");
    await gateway.end(run.session_id);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    expect(text).toContain('event: text\ndata: {"type":"text","delta":"hello"}');
    expect(text.trimEnd().split("\n\n").at(-1)).toMatch(
      /^id: \d+\nevent: run.finished\ndata: .*"status":"completed"/,
    );
  });
});
