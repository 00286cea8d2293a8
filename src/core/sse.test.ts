// SseStream over a real loopback socket: a client that never reads is dropped once what it holds
// unsent passes the bound (and what was buffered for it is freed), a client that reads the same
// volume is never dropped, and a hang-up is not counted as a drop.
import { createServer, type Server, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { bufferedSseBytes, droppedSseClients, openSseStreams, SseStream } from "./sse.js";

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server whose one route opens an SseStream and hands it to the test. */
async function serve(
  bound: number,
): Promise<{ port: number; next: () => Promise<[SseStream, ServerResponse]> }> {
  const waiting: ((s: [SseStream, ServerResponse]) => void)[] = [];
  const server = createServer((_req, res) => {
    const stream = new SseStream(res, { kind: "test", maxBufferedBytes: bound });
    stream.open();
    waiting.shift()?.([stream, res]);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return { port, next: () => new Promise((r) => waiting.push(r)) };
}

/** A server whose route hands the test a stream it has not opened yet. */
async function serveUnopened(): Promise<{ port: number; next: () => Promise<[SseStream, ServerResponse]> }> {
  const waiting: ((s: [SseStream, ServerResponse]) => void)[] = [];
  const server = createServer((_req, res) => waiting.shift()?.([new SseStream(res, { kind: "test" }), res]));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as { port: number }).port,
    next: () => new Promise((r) => waiting.push(r)),
  };
}

/** A raw client that sends the request and then reads (or never reads) the answer. */
function client(port: number, read: boolean): { socket: Socket; received: () => number } {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  let received = 0;
  socket.write("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  if (read) socket.on("data", (chunk: Buffer) => (received += chunk.length));
  else socket.pause();
  return { socket, received: () => received };
}

const payload = "x".repeat(16 * 1024);
const drops = () => droppedSseClients().find((d) => d.stream === "test")?.count ?? 0;

/** Send events until the stream refuses one or `total` bytes went out, yielding to the loop as a server would. */
async function pump(stream: SseStream, total: number, each: () => void = () => {}): Promise<number> {
  let sent = 0;
  while (sent < total && stream.event(payload)) {
    sent += payload.length;
    each();
    if (sent % (256 * 1024) === 0) await new Promise((r) => setImmediate(r));
  }
  return sent;
}

describe("SseStream", () => {
  it("drops a client that never reads once it holds more than the bound unsent, and frees it", async () => {
    const bound = 256 * 1024;
    const { port, next } = await serve(bound);
    const opened = next();
    client(port, false);
    const [stream, res] = await opened;
    const before = drops();
    // Far more than the kernel's socket buffers and the bound together; what is held stays under
    // the bound and one event until the client is dropped.
    let held = 0;
    const sent = await pump(stream, 64 * 1024 * 1024, () => {
      held = Math.max(held, bufferedSseBytes());
    });
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(bound + payload.length + 64);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect(stream.dropped).toBe(true);
    expect(stream.closed).toBe(true);
    expect(res.destroyed).toBe(true);
    expect(drops()).toBe(before + 1);
    // Nothing more is buffered for it.
    expect(stream.event("after")).toBe(false);
    await expect.poll(() => bufferedSseBytes()).toBe(0);
  });

  it("never drops a client that reads, whatever the volume", async () => {
    const { port, next } = await serve(256 * 1024);
    const opened = next();
    const reader = client(port, true);
    const [stream] = await opened;
    const total = 32 * 1024 * 1024;
    let sent = 0;
    while (sent < total) {
      expect(stream.event(payload)).toBe(true);
      sent += payload.length;
      // Let the client read, as a live server's event loop would between events.
      if (sent % (128 * 1024) === 0) await new Promise((r) => setTimeout(r, 1));
    }
    stream.end();
    expect(stream.dropped).toBe(false);
    await expect.poll(() => reader.received(), { timeout: 10_000 }).toBeGreaterThan(total);
  });

  it("sends one event larger than the bound to a client that keeps up", async () => {
    const { port, next } = await serve(64 * 1024);
    const opened = next();
    const reader = client(port, true);
    const [stream] = await opened;
    const big = "y".repeat(1024 * 1024);
    expect(stream.event(big)).toBe(true);
    await expect.poll(() => reader.received(), { timeout: 10_000 }).toBeGreaterThan(big.length);
    expect(stream.event("next")).toBe(true);
    expect(stream.dropped).toBe(false);
  });

  it("never counts a stream opened after its client went (nothing is kept for it)", async () => {
    const { port, next } = await serveUnopened();
    const opened = next();
    const c = client(port, true);
    const [stream, res] = await opened;
    const closed = new Promise((r) => res.once("close", r));
    c.socket.destroy();
    await closed;
    const before = openSseStreams();
    stream.open();
    expect(openSseStreams()).toBe(before);
    expect(stream.event("late")).toBe(false);
  });

  it("does not count a client that hangs up as dropped", async () => {
    const { port, next } = await serve(256 * 1024);
    const opened = next();
    const c = client(port, true);
    const [stream, res] = await opened;
    const before = drops();
    const closed = new Promise((r) => res.once("close", r));
    c.socket.destroy();
    await closed;
    expect(stream.event("late")).toBe(false);
    expect(stream.dropped).toBe(false);
    expect(drops()).toBe(before);
  });
});
