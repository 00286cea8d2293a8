// A gateway's stop and start as operators meet them: SIGTERM during a streamed turn tells the
// client, drains or interrupts the turn, and leaves the clean-shutdown marker only after a full
// drain; one gateway per profile, with a dead holder's pid file reclaimed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import type { Simulator } from "../src/llm/simulator/server.js";
import type { ProfilePaths } from "../src/profile/paths.js";
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

/** A `tenax gateway run` child watched from its spawn on (before it listens, and whether it ever does). */
function spawnGateway(home: string) {
  const child = spawn(process.execPath, [BIN, "gateway", "run", "--port", "0"], {
    cwd: ROOT,
    env: cliEnvironment(home),
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    err += c;
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, startedAt: Date.now(), out: () => out, err: () => err };
}

/** The pid the pid file names, or null while there is none. */
function pidIn(file: string): number | null {
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { pid: number }).pid;
  } catch {
    return null;
  }
}

/** A gateway killed with SIGKILL while the model hangs on its first turn: that turn, to be resumed. */
async function killedMidTurn(paths: ProfilePaths, sim: Simulator) {
  sim.script([{ type: "hang", phase: "before_headers" }]);
  const first = await startGateway(paths.home);
  void first
    .fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "a long question" }] }),
    })
    .catch(() => undefined);
  await until(() => sim.requests().length === 1);
  first.child.kill("SIGKILL");
  await first.exited;
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    const session = (await store.listSessions())[0]?.id ?? "";
    return { session, turn: (await store.getTurns(session))[0]?.id ?? "" };
  } finally {
    await releaseStore(store);
  }
}

describe("tenax gateway run: lifecycle", () => {
  it("SIGTERM during a streamed turn: the client is told, the turn drains, the stop is marked clean", async () => {
    const { home, sim, paths } = await simProfile("drain_timeout: 20");
    sim.script([{ type: "reply", text: "one two three four five six", chunk_size: 4, chunk_delay_ms: 150 }]);
    const gw = await startGateway(home);
    expect(gw.stdout()).toContain("first gateway start on this profile's store");
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

  it("SIGTERM while it starts (its pid file made, the store still opening): the start ends there, nothing is resumed, it never listens, and it stops cleanly", async () => {
    const { home, sim, paths } = await simProfile();
    const { session, turn } = await killedMidTurn(paths, sim);
    // The next start waits on the store's write lock while it reaps that turn: the signal comes then.
    const lock = new Database(paths.state);
    lock.exec("BEGIN IMMEDIATE");
    const gw = spawnGateway(home);
    try {
      await until(() => pidIn(paths.pid) === gw.child.pid, 15_000);
      gw.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      lock.exec("COMMIT");
      lock.close();
    }
    const exit = await gw.exited;
    console.log(`stopped while starting: exited ${Date.now() - gw.startedAt} ms after its spawn`);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(gw.out()).toMatch(/SIGTERM: stopping before it served \(the start ends here\)/);
    expect(gw.out()).toContain("gateway stopped cleanly");
    // No new work after the stop: the port never opened, and the crashed gateway's turn was left
    // interrupted (to go on with a new message) instead of being resumed and drained.
    expect(gw.out()).not.toContain("listening on");
    expect(gw.err()).toContain(
      `turn ${turn} of session ${session} was interrupted and is not resumed: the gateway is stopping`,
    );
    expect(sim.requests()).toHaveLength(1);
    expect(existsSync(paths.pid)).toBe(false);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
  });

  it("a second SIGTERM while it starts neither kills it nor leaves its pid file", async () => {
    const { home, paths } = await simProfile();
    const lock = new Database(paths.state);
    lock.exec("BEGIN IMMEDIATE");
    const gw = spawnGateway(home);
    try {
      await until(() => pidIn(paths.pid) === gw.child.pid, 15_000);
      gw.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 200));
      gw.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      lock.exec("COMMIT");
      lock.close();
    }
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    expect(gw.out()).toContain("SIGTERM again: interrupting the running turns now");
    expect(gw.out()).toContain("gateway stopped cleanly");
    expect(existsSync(paths.pid)).toBe(false);
  });

  it("a second signal during the drain cuts it short: the hung turn is interrupted and saved, and it exits", async () => {
    const { home, sim, paths } = await simProfile("drain_timeout: 120");
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const gw = await startGateway(home);
    let secondAt = 0;
    const chunks = await streamThroughSigterm(gw, sim, () => {
      gw.child.kill("SIGTERM");
      void until(() => gw.stdout().includes("SIGTERM: stopping")).then(() => {
        secondAt = Date.now();
        gw.child.kill("SIGINT");
      });
    });
    expect(await gw.exited).toBe(0);
    const took = Date.now() - secondAt;
    console.log(`second signal: exited ${took} ms after it (drain_timeout 120 s)`);
    expect(took).toBeLessThan(30_000);
    expect(gw.stdout()).toContain("SIGINT again: interrupting the running turns now");
    expect(gw.stderr()).toMatch(/the drain was cut short: 1 turn\(s\) interrupted and saved/);
    expect(chunks.error).toMatchObject({ code: "shutting_down" });
    expect(existsSync(paths.cleanShutdown)).toBe(false);
    expect(existsSync(paths.pid)).toBe(false);
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    try {
      const session = (await store.listSessions())[0]?.id ?? "";
      expect((await store.getTurns(session)).map((t) => t.status)).toEqual(["interrupted"]);
    } finally {
      await releaseStore(store);
    }
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
