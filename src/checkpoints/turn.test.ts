// TurnCheckpoints: one snapshot per project per turn, before the first change, even when the
// turn's tools ask at the same moment.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { CheckpointStore } from "./store.js";
import { type CheckpointEvent, TurnCheckpoints } from "./turn.js";

function projectWith(content: string): string {
  const dir = tempDir("tenax-project-");
  writeFileSync(join(dir, "file.txt"), content);
  return dir;
}

describe("TurnCheckpoints", () => {
  it("takes one snapshot per project per turn, shared by concurrent calls", async () => {
    const store = new CheckpointStore({ home: tempDir() });
    const dir = projectWith("before the turn");
    const events: CheckpointEvent[] = [];
    const turn = new TurnCheckpoints(store, (event) => events.push(event));

    const results = await Promise.all([
      turn.beforeChange(dir, "write_file file.txt"),
      turn.beforeChange(`${dir}/`, "patch file.txt"),
      turn.beforeChange(join(dir, "."), "terminal: sed -i"),
    ]);
    expect(results[0]?.status).toBe("created");
    expect(results[1]).toBe(results[0]);
    expect(results[2]).toBe(results[0]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "checkpoint", project: dir, result: { status: "created" } });

    // Later changes in the same turn take no new snapshot: the one before the first change stands.
    writeFileSync(join(dir, "file.txt"), "changed by the turn");
    await turn.beforeChange(dir, "write_file again");
    const list = await store.list(dir);
    expect(list.map((s) => s.reason)).toEqual(["write_file file.txt"]);

    // The next turn snapshots again, before its own first change.
    const next = new TurnCheckpoints(store);
    expect((await next.beforeChange(dir, "next turn"))?.status).toBe("created");
    expect(await store.list(dir)).toHaveLength(2);
  });

  it("snapshots each project of a turn once", async () => {
    const store = new CheckpointStore({ home: tempDir() });
    const a = projectWith("a");
    const b = projectWith("b");
    const turn = new TurnCheckpoints(store);
    await Promise.all([turn.beforeChange(a, "a1"), turn.beforeChange(b, "b1"), turn.beforeChange(a, "a2")]);
    expect((await store.list(a)).map((s) => s.reason)).toEqual(["a1"]);
    expect((await store.list(b)).map((s) => s.reason)).toEqual(["b1"]);
  });

  it("answers null when checkpoints are off, and a failure is a skip, never a throw", async () => {
    expect(await new TurnCheckpoints(null).beforeChange(tempDir(), "x")).toBeNull();

    const broken = new CheckpointStore({ home: tempDir(), git: "/nonexistent/git" });
    const events: CheckpointEvent[] = [];
    const result = await new TurnCheckpoints(broken, (event) => events.push(event)).beforeChange(
      projectWith("x"),
      "write_file",
    );
    expect(result).toMatchObject({ status: "skipped", why: expect.stringContaining("checkpoints need git") });
    expect(events.map((event) => event.result.status)).toEqual(["skipped"]);
  });
});
