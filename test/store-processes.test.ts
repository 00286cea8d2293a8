// Several processes writing one store at once, and writers killed with SIGKILL mid-loop: no lost
// acknowledged message, no "database is locked", contiguous per-session sequence numbers.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import { openReader, openStore, releaseStore } from "../src/store/registry.js";
import { tempProfile } from "./helpers/tmp.js";

const WRITER = new URL("./fixtures/store-writer.mjs", import.meta.url).pathname;
const SEED = Number(process.env.TENAX_SEED ?? Date.now() % 100000);

interface Run {
  acks: string[];
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

function runWriter(
  home: string,
  worker: string,
  count: number,
  shared: string[],
  killAfterMs?: number,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [WRITER, home, "default", worker, String(count), shared.join(",")]);
    const run: Run = { acks: [], stdout: "", stderr: "", code: null, signal: null };
    // The kill's clock starts at the writer's first ack, not at its spawn: on a loaded machine the
    // start-up alone may take longer than the delay, and a writer killed before it wrote tests nothing.
    let armed = false;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      run.stdout += chunk;
      if (killAfterMs !== undefined && !armed && run.stdout.includes("ack ")) {
        armed = true;
        setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      run.stderr += chunk;
    });
    child.on("close", (code, signal) => {
      // Only complete lines count: a line cut by the kill was never fully acknowledged.
      const lines = run.stdout.split("\n").slice(0, -1);
      run.acks = lines.filter((l) => l.startsWith("ack ")).map((l) => l.slice(4));
      resolve({ ...run, code, signal });
    });
  });
}

describe("several processes on one store", () => {
  it("lose nothing and never report a lock error", async () => {
    if (!existsSync(new URL("../dist/store/registry.js", import.meta.url)))
      throw new Error("run `npm run build` first");
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.createSession({ id: "s_shared_a" });
    await store.createSession({ id: "s_shared_b" });
    await releaseStore(store);
    const workers = ["a", "b", "c", "d"];
    const count = 300;
    const runs = await Promise.all(
      workers.map((w) => runWriter(paths.home, w, count, ["s_shared_a", "s_shared_b"])),
    );
    for (const run of runs) {
      expect(run.stderr).not.toMatch(/locked|busy/i);
      expect(run.code).toBe(0);
      expect(run.acks).toHaveLength(count);
    }
    console.log(
      `busy retries per writer: ${runs.map((r) => r.stdout.match(/retries=(\d+)/)?.[1]).join(", ")}`,
    );
    const reader = openReader(paths);
    const uids = new Set<string>();
    for (const session of await reader.listSessions({ limit: 100 })) {
      const messages = await reader.getMessages(session.id);
      expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => i + 1));
      for (const m of messages) uids.add(m.uid);
    }
    reader.close();
    expect(uids.size).toBe(workers.length * count);
    for (const run of runs) for (const uid of run.acks) expect(uids.has(uid)).toBe(true);
  });

  it("a writer killed with SIGKILL mid-loop loses no acknowledged message", async () => {
    console.log(`kill -9 test seed=${SEED}`);
    const random = seededRandom(SEED);
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.createSession({ id: "s_shared" });
    await releaseStore(store);
    const acked: string[] = [];
    for (let round = 0; round < 6; round++) {
      // Two writers at once, each killed at a random moment while it is writing.
      const runs = await Promise.all(
        ["x", "y"].map((w) =>
          runWriter(paths.home, `${w}${round}`, 100_000, ["s_shared"], 150 + Math.floor(random() * 400)),
        ),
      );
      for (const run of runs) {
        expect(run.signal).toBe("SIGKILL");
        acked.push(...run.acks);
      }
      // After each round of kills, the store opens normally (WAL recovery) and holds every ack.
      const reader = openReader(paths);
      const present = new Set<string>();
      for (const s of await reader.listSessions({ limit: 1000 }))
        for (const m of await reader.getMessages(s.id)) present.add(m.uid);
      const shared = (await reader.getMessages("s_shared")).map((m) => m.seq);
      expect(shared).toEqual(shared.map((_, i) => i + 1));
      reader.close();
      const missing = acked.filter((uid) => !present.has(uid));
      expect(missing).toEqual([]);
    }
    expect(acked.length).toBeGreaterThan(50);
    const check = await openStore(paths, { integrityCheckTimeoutMs: 30_000 });
    expect(check.health().integrity?.status).toBe("ok");
    await releaseStore(check);
  });
});
