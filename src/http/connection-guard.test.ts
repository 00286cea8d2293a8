// Connections on real sockets. Through the shared app (createApp, as the gateway and dashboard
// build theirs): a socket that sends nothing, half a request line or a head without its end is
// answered 408 and closed once headers_timeout has passed, and not before, fully, even when the
// peer keeps its side open; a connection idle after an answer goes after keep_alive_timeout; one
// whose answer is still streaming never does, however short the request timeout (it bounds
// receiving the request, not sending the reply). On the guard alone: past max_connections the
// longest-waiting idle socket makes room for a client that sends its request, and a connection is
// refused only when every one held is busy.
import { createServer, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type App, connectionStats, createApp } from "./app.js";
import { ConnectionGuard, type ConnectionLimits, DEFAULT_CONNECTION_LIMITS } from "./connection-guard.js";
import { closeApp, listen } from "./listen.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: () => boolean, ms = 5_000): Promise<void> {
  for (const end = Date.now() + ms; !what(); await sleep(10))
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
}

/** The shared app with one streaming route and one that holds its answer open until told. */
async function app(limits: Partial<ConnectionLimits>) {
  const held: ServerResponse[] = [];
  const a: App = createApp({ connections: limits });
  a.get("/", async () => ({ ok: true }));
  a.get("/hold", (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/plain" });
    reply.raw.write("holding\n");
    held.push(reply.raw);
  });
  a.get("/stream", (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/event-stream" });
    let n = 0;
    const tick = setInterval(() => {
      reply.raw.write(`data: ${n}\n\n`);
      if (++n === 12) {
        clearInterval(tick);
        reply.raw.end("data: [DONE]\n\n");
      }
    }, 100);
  });
  const port = await listen(a, "127.0.0.1", 0, { name: "test" });
  cleanups.push(() => closeApp(a));
  return { app: a, port, held };
}

interface Peer {
  socket: Socket;
  /** Everything the server sent. */
  got: () => string;
  /** Resolves when the server ended its side. */
  ended: Promise<void>;
}

/** A client socket that keeps its own side open (as a flood would), sending `send` once connected. */
async function peer(port: number, send?: string): Promise<Peer> {
  const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  let got = "";
  socket.on("data", (d: Buffer) => {
    got += d.toString();
  });
  socket.on("error", () => {});
  const ended = new Promise<void>((r) => socket.once("end", () => r()));
  await new Promise<void>((r, j) => {
    socket.once("connect", () => r());
    socket.once("error", j);
  });
  if (send !== undefined) socket.write(send);
  cleanups.push(() => {
    socket.destroy();
  });
  return { socket, got: () => got, ended };
}

describe("connection timeouts, through the shared app", () => {
  it("a socket that sends nothing, half a request line or an unfinished head is answered 408 and closed after headers_timeout, not before", async () => {
    const s = await app({ headers_timeout_ms: 1_000 });
    const started = Date.now();
    const peers = [
      await peer(s.port),
      await peer(s.port, "GET /v1/mod"),
      await peer(s.port, "GET / HTTP/1.1\r\nHost: x\r\n"),
    ];
    await until(() => connectionStats(s.app).open === 3);
    await Promise.all(peers.map((p) => p.ended));
    // Each one's deadline counts from its own arrival, after `started`.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    for (const p of peers) expect(p.got()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // Closed outright, though every peer keeps its own side open: no descriptor is left behind.
    await until(() => connectionStats(s.app).open === 0);
    expect(await new Promise((r) => s.app.server.getConnections((_e, n) => r(n)))).toBe(0);
  });

  it("a kept-alive connection goes after keep_alive_timeout; one whose answer is in flight stays", async () => {
    const s = await app({ headers_timeout_ms: 300, request_timeout_ms: 300, keep_alive_timeout_ms: 300 });
    const busy = await peer(s.port, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    const kept = await peer(s.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await kept.ended;
    expect(kept.got()).toMatch(/^HTTP\/1\.1 200 /);
    await sleep(1_500);
    expect(busy.socket.readableEnded).toBe(false);
    expect(connectionStats(s.app)).toMatchObject({ open: 1, waiting: 0 });
    s.held[0]?.end("done");
    await busy.ended;
    expect(busy.got()).toContain("done");
  });

  it("a request timeout far shorter than the answer never cuts it: it bounds receiving the request", async () => {
    const s = await app({ headers_timeout_ms: 200, request_timeout_ms: 300, keep_alive_timeout_ms: 200 });
    const started = Date.now();
    const body = await (await fetch(`http://127.0.0.1:${s.port}/stream`)).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_100);
    expect(body).toContain("data: 11\n\n");
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
  });
});

/** A plain node:http server under the guard, its timeouts long so only the cap acts here. */
async function capped(max: number) {
  const held: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url === "/hold") {
      res.writeHead(200);
      res.write("holding\n");
      held.push(res);
      return;
    }
    res.end("answered");
  });
  const guard = new ConnectionGuard(server, {
    ...DEFAULT_CONNECTION_LIMITS,
    headers_timeout_ms: 60_000,
    keep_alive_timeout_ms: 30_000,
    max_connections: max,
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { guard, port: (server.address() as AddressInfo).port, held };
}

const gone = (p: Peer) => p.ended;
const isOpen = (p: Peer) => !p.socket.readableEnded && !p.socket.destroyed;
const get = (port: number) => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());

describe("the connection cap", () => {
  it("past max_connections the longest-waiting idle socket makes room, so a client that sends its request is answered", async () => {
    const s = await capped(10);
    const idle: Peer[] = [];
    for (let i = 0; i < 10; i++) idle.push(await peer(s.port, i % 2 === 0 ? undefined : "GET /half"));
    await until(() => s.guard.stats().open === 10);

    expect(await get(s.port)).toBe("answered");
    await gone(idle[0] as Peer);
    expect(idle.slice(1).every(isOpen)).toBe(true);
    expect(s.guard.stats()).toMatchObject({ evicted: 1, refused: 0 });

    // 200 more idle sockets: each pushes out the oldest idle one; the kept-alive client is last in line.
    const flood = await Promise.all(Array.from({ length: 200 }, () => peer(s.port)));
    await Promise.all(idle.map(gone));
    await until(() => flood.filter(isOpen).length <= 9);
    expect(s.guard.stats().open).toBe(10);
    expect(await get(s.port)).toBe("answered");
    expect(s.guard.stats().refused).toBe(0);
  });

  it("refuses a new connection only when every connection held is busy with a request", async () => {
    const s = await capped(10);
    for (let i = 0; i < 10; i++) await peer(s.port, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => s.held.length === 10);
    const late = await peer(s.port);
    await gone(late);
    expect(s.guard.stats()).toMatchObject({ open: 10, refused: 1, evicted: 0 });
    // One answer ends: its connection waits again, and is the one a newcomer pushes out.
    s.held[0]?.end("done");
    await until(() => s.guard.stats().waiting === 1);
    expect(await get(s.port)).toBe("answered");
    expect(s.guard.stats()).toMatchObject({ refused: 1, evicted: 1 });
  });
});
