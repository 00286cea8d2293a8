// A Tenax process killed with SIGKILL in the middle of a turn: the transcript it leaves is
// complete up to the kill, the turn still says "running" while its lease lasts, and the next
// start sees it as interrupted once the lease has expired.
import { spawn } from "node:child_process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { reapDeadTurns } from "../src/agent/reap.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

const TURN = new URL("./fixtures/agent-turn.mjs", import.meta.url).pathname;
let sim: Simulator | undefined;

beforeAll(() => requireBuild());
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe("a turn whose process is killed", () => {
  it("leaves a transcript that the next start sees as interrupted", async () => {
    sim = await startSimulator();
    // The first call asks for a tool; the second hangs mid-stream, where the process is killed.
    sim.script([
      {
        type: "tool_calls",
        calls: [{ name: "write_file", arguments: { path: "a.txt", content: "written before the kill" } }],
      },
      { type: "hang", phase: "mid_stream", after_chunks: 2 },
    ]);
    const paths = profileWith(
      `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\nagent: { lease_seconds: 30 }\n`,
    );
    const setup = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await setup.createSession({ title: "crash" });
    await releaseStore(setup);

    const child = spawn(process.execPath, [
      TURN,
      paths.home,
      "default",
      session,
      tempDir(),
      "please write a.txt",
    ]);
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
    });
    const deadline = Date.now() + 10_000;
    while (!(sim.requests().length === 2 && out.includes('"text"')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sim.requests()).toHaveLength(2);
    child.kill("SIGKILL");
    await new Promise((r) => child.on("close", r));

    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    try {
      // Everything committed before the kill is there: the question, the tool call and its result.
      expect((await store.getMessages(session)).map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
      const [turn] = await store.getTurns(session);
      expect(turn?.status).toBe("running");
      // While the lease lasts the turn may be alive somewhere: it is not taken over.
      expect(await reapDeadTurns(store, Date.now())).toEqual([]);
      const later = (turn?.lease_expires_at ?? 0) + 1;
      expect(await reapDeadTurns(store, later)).toEqual([
        { turn_id: turn?.id, session_id: session, interrupt_count: 1 },
      ]);
      expect((await store.getTurns(session))[0]).toMatchObject({ status: "interrupted", interrupt_count: 1 });
      const marker = (await store.getMessages(session)).at(-1);
      expect(marker).toMatchObject({ role: "marker" });
      expect(marker?.content).toMatch(/the process running it stopped/);
      // Reaping twice changes nothing.
      expect(await reapDeadTurns(store, later)).toEqual([]);
    } finally {
      await releaseStore(store);
    }
  });
});
