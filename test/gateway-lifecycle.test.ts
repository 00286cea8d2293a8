// A gateway's stop and start as operators meet them: SIGTERM during a streamed turn tells the
// client, drains or interrupts the turn, and leaves the clean-shutdown marker only after a full
// drain; one gateway per profile, with a dead holder's pid file reclaimed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import type { Simulator } from "../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { BIN, cliEnvironment, ROOT, requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, refusedGateway, simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => requireBuild());

interface Chunk {
  choices: { delta: { content?: string | null }; finish_reason: string | null }[];
  tenax?: { event?: string; partial?: boolean; status?: string };
}

/**
 * Read a streamed turn with the openai client, sending SIGTERM once the model has been called;
 * `error` is what the client raised (a turn the drain interrupted ends in an error event).
 */
async function streamThroughSigterm(gw: GatewayProcess, sim: Simulator, kill: () => void) {
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key ?? "unused", maxRetries: 0 });
  const stream = await openai.chat.completions.create({
    model: "tenax",
    stream: true,
    messages: [{ role: "user", content: "tell me" }],
  });
  const chunks: Chunk[] = [];
  let killed = false;
  let error: unknown = null;
  try {
    for await (const chunk of stream) {
      chunks.push(chunk as unknown as Chunk);
      if (!killed) {
        killed = true;
        await until(() => sim.requests().length > 0);
        kill();
      }
    }
  } catch (e) {
    error = e;
  }
  return Object.assign(chunks, { error });
}

describe("tenax gateway run: lifecycle", () => {
  it("SIGTERM during a streamed turn: the client is told, the turn drains, the stop is marked clean", async () => {
    const { home, sim, paths } = await simProfile("drain_timeout: 20");
    sim.script([{ type: "reply", text: "one two three four five six", chunk_size: 4, chunk_delay_ms: 150 }]);
    const gw = await startGateway(home);
    expect(gw.stdout()).toContain("the last gateway stop was not clean");
    expect(existsSync(paths.pid)).toBe(true);
    let refused: Response | null = null;
    const chunks = await streamThroughSigterm(gw, sim, () => {
      gw.child.kill("SIGTERM");
      // A new turn while draining is refused with a 503 that says why.
      setTimeout(() => {
        void gw
          .fetch("/v1/chat/completions", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ messages: [{ role: "user", content: "late" }] }),
          })
          .then((r) => {
            refused = r;
          });
      }, 100);
    });
    expect(chunks.error).toBeNull();
    const shutdowns = chunks.filter((c) => c.tenax?.event === "shutdown");
    expect(shutdowns).toHaveLength(1);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("one two three four five six");
    expect(chunks.at(-1)).toMatchObject({
      choices: [{ finish_reason: "stop" }],
      tenax: { partial: false, status: "completed" },
    });
    expect(await gw.exited).toBe(0);
    expect((refused as Response | null)?.status).toBe(503);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
    expect(existsSync(paths.pid)).toBe(false);
    const next = await startGateway(home);
    expect(next.stdout()).toContain("the last gateway stop was clean");
    expect(existsSync(paths.cleanShutdown)).toBe(false);
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  });

  it("SIGTERM during a hung turn: the drain times out, the turn ends interrupted and saved, the client gets shutting_down, no clean marker", async () => {
    const { home, sim, paths } = await simProfile("drain_timeout: 0.5");
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const gw = await startGateway(home);
    const chunks = await streamThroughSigterm(gw, sim, () => gw.child.kill("SIGTERM"));
    expect(chunks.filter((c) => c.tenax?.event === "shutdown")).toHaveLength(1);
    // The interrupted turn is an error the client raises, never a reply that looks whole or cut.
    expect(chunks.error).toBeInstanceOf(OpenAI.APIError);
    expect(chunks.error).toMatchObject({ code: "shutting_down", error: { layer: "interrupt" } });
    expect(chunks.flatMap((c) => c.choices).filter((c) => c.finish_reason !== null)).toEqual([]);
    expect(await gw.exited).toBe(0);
    expect(gw.stderr()).toMatch(/the drain timed out: 1 turn\(s\) interrupted and saved/);
    expect(existsSync(paths.cleanShutdown)).toBe(false);
    expect(existsSync(paths.pid)).toBe(false);
    const next = await startGateway(home);
    expect(next.stdout()).toContain("the last gateway stop was not clean");
    const sessions = (await (await next.fetch(`/api/sessions`)).json()) as { data: { id: string }[] };
    const id = sessions.data[0]?.id ?? "";
    const shown = (await (await next.fetch(`/api/sessions/${id}`)).json()) as {
      messages: { content: string }[];
    };
    expect(shown.messages.map((m) => m.content)).toContain("tell me");
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  });

  it("SIGTERM while it starts (its pid file made, not yet listening): it comes up, drains and stops cleanly", async () => {
    const { home, paths } = await simProfile();
    // A store of some size, so opening it (and checking it) keeps the start busy for a while.
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    for (let i = 0; i < 200; i++) await store.createSession({ title: `s${i}` });
    await releaseStore(store);
    const child = spawn(process.execPath, [BIN, "gateway", "run", "--port", "0"], {
      cwd: ROOT,
      env: cliEnvironment(home),
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.on("close", (code, signal) => resolve({ code, signal })),
    );
    await until(() => existsSync(paths.pid), 15_000);
    const early = !out.includes("listening on");
    child.kill("SIGTERM");
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(out).toMatch(/SIGTERM: stopping/);
    expect(out).toContain("gateway stopped cleanly");
    expect(existsSync(paths.pid)).toBe(false);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
    // The signal came before it listened (else this test proves nothing new).
    expect(early).toBe(true);
  });

  it("one gateway per profile: a second refuses and names the holder; a dead holder's pid file is reclaimed", async () => {
    const { home, paths } = await simProfile();
    const gw = await startGateway(home);
    const pid = gw.child.pid ?? 0;
    const second = await refusedGateway(home);
    expect(second.status).toBe(1);
    expect(second.output).toContain(`already running (pid ${pid}`);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);

    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(paths.pid, `${JSON.stringify({ pid: dead, started_at: 0 })}\n`);
    const next = await startGateway(home);
    expect(next.stderr()).toContain(`reclaimed the pid file of gateway pid ${dead}`);
    expect(JSON.parse(readFileSync(paths.pid, "utf8")).pid).toBe(next.child.pid);
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
    await until(() => !existsSync(paths.pid));
  });
});
