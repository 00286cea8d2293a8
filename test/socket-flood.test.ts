// A flood of sockets that never send a request, or half a request line, against a real
// `tenax gateway run` and a real `tenax dashboard`, with their connection limits lowered in
// config.yaml so the test is quick: (1) such sockets are closed once `headers_timeout` has passed,
// (2) a real client keeps getting answers while thousands more arrive, and (3) the server's count
// of open sockets stays at `max_connections` instead of growing with the flood (the cap is above
// the listen backlog of 511, so a burst of arrivals in one turn of the event loop never pushes out
// a client whose request head is already on its way).
import { readdirSync, readlinkSync } from "node:fs";
import { connect, type Socket } from "node:net";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { simProfile, startGateway } from "./helpers/gateway.js";
import type { ListeningProcess } from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const HEAD_SECONDS = 2;
const MAX_CONNECTIONS = 800;
const CONNECTIONS = `connections: { headers_timeout: ${HEAD_SECONDS}, max_connections: ${MAX_CONNECTIONS} }`;

interface Attacker {
  socket: Socket;
  gone: Promise<number>;
}

/**
 * A socket that connects and sends `send` (or nothing), then waits, keeping its own side open even
 * after the server ends its side (as a hostile client would); `gone` resolves when the server ends it.
 */
function attacker(url: string, send: string | null): Promise<Attacker> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    socket.on("error", () => {});
    socket.on("data", () => {});
    const gone = new Promise<number>((r) => {
      socket.once("end", () => r(Date.now()));
      socket.once("close", () => r(Date.now()));
    });
    socket.once("connect", () => {
      if (send !== null) socket.write(send);
      resolve({ socket, gone });
    });
    // Refused at once (never expected here): resolve anyway, so the flood does not hang.
    socket.once("close", () => resolve({ socket, gone }));
  });
}

async function openMany(url: string, count: number, send: (i: number) => string | null): Promise<Attacker[]> {
  const out: Attacker[] = [];
  for (let i = 0; i < count; i += 100) {
    const batch = Array.from({ length: Math.min(100, count - i) }, (_, j) => attacker(url, send(i + j)));
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/** The sockets among the server's open file descriptors (the rest, files and a worker's, come and go). */
function sockets(server: ListeningProcess): number {
  const dir = `/proc/${server.child.pid}/fd`;
  let n = 0;
  for (const fd of readdirSync(dir)) {
    try {
      if (readlinkSync(`${dir}/${fd}`).startsWith("socket:")) n++;
    } catch {
      // Closed between the listing and the look.
    }
  }
  return n;
}
const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([
    p,
    new Promise<never>((_, j) => setTimeout(() => j(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

/**
 * (1) and (3), and (2) through `answer`: 100 silent and 100 half-line sockets are closed after the
 * head timeout and not long after; then 3,000 more arrive, and the answers go on throughout.
 */
async function flood(server: ListeningProcess, answer: () => Promise<void>) {
  const baseline = sockets(server);
  const started = Date.now();
  const first = await openMany(server.url, 200, (i) => (i % 2 === 0 ? null : "GET /v1/chat/compl"));
  expect(first.every((a) => !a.socket.destroyed)).toBe(true);
  const closedAt = await withTimeout(Promise.all(first.map((a) => a.gone)), 15_000, "idle sockets closed");
  // Not before the timeout (a socket's deadline counts from its own arrival, after `started`).
  expect(Math.min(...closedAt) - started).toBeGreaterThanOrEqual(HEAD_SECONDS * 1000);
  // And closed on the server's side too, though each attacker keeps its own side open.
  for (let i = 0; i < 200 && sockets(server) > baseline + 5; i++) await new Promise((r) => setTimeout(r, 25));
  expect(sockets(server)).toBeLessThanOrEqual(baseline + 5);
  for (const a of first) a.socket.destroy();

  let peak = sockets(server);
  let answered = 0;
  const sampling = setInterval(() => {
    peak = Math.max(peak, sockets(server));
  }, 20);
  try {
    const attack = openMany(server.url, 4_000, (i) => (i % 3 === 0 ? "GET / HTTP/1.1\r\nHost: x\r\n" : null));
    const client = (async () => {
      for (let i = 0; i < 10; i++) {
        await answer();
        answered++;
      }
    })();
    const [held] = await Promise.all([attack, client]);
    expect(answered).toBe(10);
    await answer();
    peak = Math.max(peak, sockets(server));
    // The flood is held to the cap: the rest were closed to make room.
    const stillOpen = () => held.filter((a) => !a.socket.readableEnded && !a.socket.destroyed).length;
    for (let i = 0; i < 200 && stillOpen() > MAX_CONNECTIONS; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(stillOpen()).toBeLessThanOrEqual(MAX_CONNECTIONS);
    for (const a of held) a.socket.destroy();
  } finally {
    clearInterval(sampling);
  }
  // The listener, the client's connection and the provider's pool come on top of the cap.
  expect(peak - baseline).toBeLessThanOrEqual(MAX_CONNECTIONS + 10);
}

describe("a flood of idle sockets", () => {
  it("the gateway closes them after headers_timeout, answers a real client throughout, and holds its descriptors to max_connections", async () => {
    const { home } = await simProfile(CONNECTIONS);
    const gw = await startGateway(home);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key ?? "", maxRetries: 0 });
    await flood(gw, async () => {
      const done = await client.chat.completions.create({
        model: "tenax",
        messages: [{ role: "user", content: "still there?" }],
      });
      expect(done.choices[0]?.message.content).toContain("echo: still there?");
    });
    expect((await gw.fetch("/health/live")).status).toBe(200);
  });

  it("so does the dashboard", async () => {
    const dashboard = await startDashboard(profileWith(`dashboard: { ${CONNECTIONS} }\n`).home);
    await flood(dashboard, async () => {
      const page = await dashboard.fetch("/api/sessions");
      expect(page.status).toBe(200);
      await page.arrayBuffer();
    });
  });
});
