// Clients that stop reading cannot grow a real gateway's memory: 50 followers of /api/events that
// never read are dropped past the per-client bound while thousands of turns run, and RSS stays
// flat; a dropped follower comes back with Last-Event-ID; a run's follower that stops reading is
// dropped and resumes from where it was; a streamed chat client that stops reading is dropped
// and its turn still completes and is saved.
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, sharedSimGateway, simProfile, startGateway } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/**
 * An echo model that may answer 8 MB in one reply: the simulator cuts a reply at the request's
 * max_tokens, as a provider does, and the agent asks for at most the model's max_output_tokens
 * (and for no more than fits its window).
 */
const LONG_REPLIES = { echo: { context_window: 4_000_000, max_output_tokens: 2_500_000 } };

/** A raw GET that is sent and then never read: the kernel's buffers fill, then the server's. */
function stalled(gw: GatewayProcess, path: string): Socket {
  const { hostname, port } = new URL(gw.url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  const lines = Object.entries(gw.auth).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${lines.join("")}\r\n`);
  socket.pause();
  return socket;
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return Number(line?.[1] ?? 0) / 1024;
}

async function metric(gw: GatewayProcess, name: string, labels: string): Promise<number> {
  const text = await (await gw.fetch("/metrics")).text();
  const prefix = labels === "" ? `${name} ` : `${name}{${labels}}`;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

const ask = (gw: GatewayProcess, content: string, stream = false) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", stream, messages: [{ role: "user", content }] }),
  });

/** `count` turns, `parallel` at a time; every one must succeed. */
async function turns(gw: GatewayProcess, count: number, parallel = 8): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const n = next++;
        const response = await ask(gw, `turn ${n}`);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
    }),
  );
}

describe("slow readers", () => {
  it("keeps RSS flat with 50 /api/events followers that never read, dropping each past the bound", async () => {
    const { home } = await simProfile("stream_buffer_kb: 64");
    const gw = await startGateway(home);
    const pid = gw.child.pid as number;
    // Warm up first: a new process grows its heap and caches over its first thousands of turns.
    await turns(gw, 3000, 16);
    for (let i = 0; i < 50; i++) stalled(gw, "/api/events");
    await expect.poll(() => metric(gw, "tenax_event_clients", ""), { timeout: 10_000 }).toBe(50);
    const before = rssMb(pid);
    const total = 10_000;
    // What the gateway holds unsent for its clients, sampled while the turns run.
    let held = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        held = Math.max(held, await metric(gw, "tenax_sse_buffered_bytes", ""));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await turns(gw, total, 16);
    sampling = false;
    await sampler;
    const after = rssMb(pid);
    const dropped = await metric(gw, "tenax_sse_clients_dropped_total", 'stream="events"');
    console.log(
      `50 stalled /api/events clients, ${total} turns: RSS ${before.toFixed(1)} -> ${after.toFixed(1)} MB, at most ${(held / 1024).toFixed(0)} KiB held unsent, ${dropped} dropped`,
    );
    expect(dropped).toBe(50);
    // Each client is sent about 600 bytes a turn, and the kernel takes about 4 MB a socket: the
    // rest, about 2 MB a client or 100 MB in all, would stay in the gateway. Bounded, a client is
    // dropped past 64 KiB (and one event).
    expect(held).toBeLessThanOrEqual(50 * (64 + 1) * 1024);
    // RSS also grows by itself over 10,000 turns (heap and caches, 20 to 60 MB on this machine);
    // unbounded, it grew by 100 MB more.
    expect(after - before).toBeLessThan(80);

    // A dropped follower resumes with Last-Event-ID: the events after it, and a note for the gap.
    const resumed = await gw.fetch("/api/events", { headers: { "last-event-id": "1" } });
    const reader = (resumed.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^: events 2 to \d+ are no longer held/);
    await reader.cancel();
  }, 180_000);

  // These two count drops on streams of their own (run_events, chat): one gateway serves both.
  describe("with replies of 8 MB", () => {
    const longReplies = sharedSimGateway("stream_buffer_kb: 64", undefined, LONG_REPLIES);

    it("drops a run's follower that stops reading; it resumes with Last-Event-ID and misses nothing", async () => {
      const { gw, sim } = longReplies();
      // 8 MB (more than the kernel holds for a socket, about 4 MB, and the bound), in pieces slow
      // enough to span many of the run log's batches.
      const text = "abcdefghij".repeat(800_000);
      sim.script([{ type: "reply", text, chunk_size: 8000, chunk_delay_ms: 2 }]);
      const submitted = await gw.fetch("/v1/runs", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: "a long one" }] }),
      });
      const run = (await submitted.json()) as { run_id: string };
      stalled(gw, `/v1/runs/${run.run_id}/events`);
      await expect
        .poll(() => metric(gw, "tenax_sse_clients_dropped_total", 'stream="run_events"'), {
          timeout: 60_000,
        })
        .toBe(1);
      const state = async () =>
        (await (await gw.fetch(`/v1/runs/${run.run_id}`)).json()) as { status: string; reply: string };
      await expect.poll(async () => (await state()).status, { timeout: 60_000 }).toBe("completed");

      // Everything, from the start, once: the text events join to the whole reply.
      const all = await (
        await gw.fetch(`/v1/runs/${run.run_id}/events`, { headers: { "last-event-id": "0" } })
      ).text();
      const frames = all.split("\n\n").filter((f) => f.includes("data: "));
      const ids = frames.map((f) => Number(/^id: (\d+)/m.exec(f)?.[1]));
      expect(ids).toEqual(ids.map((_, i) => i + 1));
      const joined = frames
        .filter((f) => /^event: text$/m.test(f))
        .map((f) => (JSON.parse(/^data: (.*)$/m.exec(f)?.[1] ?? "{}") as { delta: string }).delta)
        .join("");
      expect(joined).toBe(text);
    }, 120_000);

    it("drops a streamed chat client that stops reading, and its turn still completes and is saved", async () => {
      const { gw, sim } = longReplies();
      const text = "0123456789".repeat(800_000);
      sim.script([{ type: "reply", text, chunk_size: 4000 }]);
      const { hostname, port } = new URL(gw.url);
      const socket = connect(Number(port), hostname);
      sockets.push(socket);
      const body = JSON.stringify({
        model: "tenax",
        stream: true,
        messages: [{ role: "user", content: "long" }],
      });
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}:${port}\r\nauthorization: Bearer ${gw.key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      // Read the status line and headers only, then stop reading.
      const head = await new Promise<string>((resolve) => {
        let got = "";
        const onData = (chunk: Buffer) => {
          got += chunk.toString("latin1");
          if (got.includes("\r\n\r\n")) {
            socket.off("data", onData);
            socket.pause();
            resolve(got);
          }
        };
        socket.on("data", onData);
      });
      const session = /x-session-id: (\S+)/i.exec(head)?.[1] as string;
      expect(session).toMatch(/^s_/);
      await expect
        .poll(() => metric(gw, "tenax_sse_clients_dropped_total", 'stream="chat"'), { timeout: 60_000 })
        .toBe(1);
      const saved = async () =>
        (await (await gw.fetch(`/api/sessions/${session}`)).json()) as {
          running: boolean;
          messages: { role: string; content: string }[];
        };
      await expect.poll(async () => (await saved()).running, { timeout: 60_000 }).toBe(false);
      const messages = (await saved()).messages;
      expect(messages.filter((m) => m.role === "assistant").at(-1)?.content).toBe(text);
    }, 120_000);
  });
});
