// The runs routes in-process over a real socket, with hand-driven turns: an idle event stream
// sends `: keepalive` comments, then carries the live events and ends after `run.finished`.
import { afterEach, describe, expect, it } from "vitest";
import { FakeGateway } from "../../../test/helpers/fake-gateway.js";
import { tempProfile } from "../../../test/helpers/tmp.js";
import { createApp, refuseOtherMethods } from "../../http/app.js";
import { closeApp, listen } from "../../http/listen.js";
import { openStore } from "../../store/registry.js";
import { RunRegistry } from "../runs.js";
import { registerRunRoutes } from "./runs.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(maxBufferedBytes?: number) {
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  const gateway = new FakeGateway(store);
  const app = createApp();
  registerRunRoutes(app, new RunRegistry({ store, gateway }), {
    keepaliveMs: 20,
    ...(maxBufferedBytes === undefined ? {} : { maxBufferedBytes }),
  });
  refuseOtherMethods(app);
  // Over a real socket: the stream's pace and the keepalives are the point.
  const port = await listen(app, "127.0.0.1", 0, { name: "test" });
  closers.push(() => closeApp(app));
  return { gateway, store, url: `http://127.0.0.1:${port}` };
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

  it("a follower catching up on the stored events also gets those published meanwhile that the store could not take", async () => {
    // A bound above one event and the high-water mark with room for live events, and far below
    // the 6 MB backlog: only a backlog sent at the client's pace gets through it.
    const { gateway, store, url } = await serve(256 * 1024);
    const posted = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
    });
    const run = (await posted.json()) as { run_id: string; session_id: string };
    // A stored backlog of 150 events of 40 KB (6 MB, more than the kernel holds for a socket),
    // one batch each.
    for (let i = 0; i < 150; i++) {
      gateway.say(run.session_id, `${i} ${"x".repeat(40_000)}`);
      await new Promise((r) => setTimeout(r, 12));
    }
    const response = await fetch(`${url}/v1/runs/${run.run_id}/events`, {
      headers: { "last-event-id": "0" },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    // Read slowly, so the backlog is sent at this pace while more comes.
    const first = await reader.read();
    text += decoder.decode(first.value, { stream: true });
    // The store refuses writes from now on; the run's next events are still published, while the
    // reader has not read on, so the backlog (more than the socket's buffers hold) is still being
    // sent. They are many and large (20 of 40 KB, past the bound together): they too must go at
    // the reader's pace, after the stored ones.
    store.reportDamage("the test damaged the store");
    for (let i = 0; i < 20; i++) {
      gateway.say(run.session_id, `late ${i} ${"y".repeat(40_000)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    const ids = () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    const deadline = Date.now() + 20_000;
    // (Deltas published together are one event: each late one is looked for as text.)
    while (!text.includes("late 19 ")) {
      if (Date.now() > deadline) throw new Error(`the late events never came; last ids ${ids().slice(-3)}`);
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early:\n${text.slice(-500)}`);
      text += decoder.decode(value, { stream: true });
      await new Promise((r) => setTimeout(r, 2));
    }
    await reader.cancel();
    expect(ids()).toEqual(ids().map((_, i) => i + 1));
    for (let i = 0; i < 20; i++) expect(text).toContain(`late ${i} `);
    // Reading 6 MB at a slow reader's pace takes its time on a loaded machine.
  }, 60_000);
});
