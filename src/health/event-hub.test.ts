// The event feed over a real socket: a follower that reconnects with a Last-Event-ID gets what it
// missed; one whose id came from an earlier gateway process (ids start again from 1) gets every
// event held, not nothing until the new process passes its old id.
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { EventHub } from "./event-hub.js";

const servers: Server[] = [];
const closing = new AbortController();
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(hub: EventHub): Promise<string> {
  const server = createServer((req, res) => {
    const raw = req.headers["last-event-id"];
    hub.serve(res, raw === undefined ? null : Number(raw), closing.signal);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
}

/** Read the stream until `count` events came; their ids, and the comments before them. */
async function read(url: string, lastId: string | null, count: number) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: lastId === null ? {} : { "last-event-id": lastId },
    signal: controller.signal,
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  const ids: number[] = [];
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    ids.splice(0, ids.length, ...[...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])));
  }
  controller.abort();
  return { ids, comments: [...text.matchAll(/^: (.*)$/gm)].map((m) => m[1] ?? "") };
}

describe("EventHub.serve", () => {
  it("resumes after a Last-Event-ID with what came since", async () => {
    const hub = new EventHub();
    for (let i = 0; i < 5; i++) hub.publish({ type: "gateway_started" });
    const url = await serve(hub);
    const { ids } = await read(url, "3", 2);
    expect(ids).toEqual([4, 5]);
  });

  it("gives a follower whose id came from an earlier gateway process every event held, and says why", async () => {
    const hub = new EventHub();
    for (let i = 0; i < 3; i++) hub.publish({ type: "gateway_started" });
    const url = await serve(hub);
    const { ids, comments } = await read(url, "5000", 3);
    expect(ids).toEqual([1, 2, 3]);
    expect(comments[0]).toMatch(/event 5000 is from an earlier gateway process/);
  });

  it("misses nothing published while it replays, and sends nothing twice", async () => {
    const hub = new EventHub({ maxBufferedBytes: 64 * 1024 });
    for (let i = 0; i < 400; i++) hub.publish({ type: "gateway_started", message: "m".repeat(500) });
    const url = await serve(hub);
    const reading = read(url, "0", 420);
    // Published while the backlog is sent at the client's pace.
    for (let i = 0; i < 20; i++) {
      hub.publish({ type: "shutdown" });
      await new Promise((r) => setImmediate(r));
    }
    const { ids } = await reading;
    expect(ids).toEqual(Array.from({ length: 420 }, (_, i) => i + 1));
  });
});
