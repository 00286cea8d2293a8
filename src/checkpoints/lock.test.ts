// The per-project lock between processes: a dead holder's file is taken over, a live one is
// waited for and then reported, and calls inside one process run one after another.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { ProjectLocks } from "./lock.js";

function fakeTime() {
  let now = 1_000_000;
  return {
    clock: { now: () => now },
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

describe("ProjectLocks", () => {
  it("takes over the lock file of a process that is gone", async () => {
    const file = join(tempDir(), "lock");
    writeFileSync(file, "999999999\n"); // no such pid
    const locks = new ProjectLocks({ ...fakeTime(), timeoutMs: 1000, staleMs: 600_000 });
    const seen = await locks.with(file, async () => readFileSync(file, "utf8"));
    expect(seen).toBe(`${process.pid}\n`);
    expect(() => readFileSync(file)).toThrow(); // released afterwards
  });

  it("waits for a live holder, then gives up with a message that names the file", async () => {
    const file = join(tempDir(), "lock");
    writeFileSync(file, `${process.ppid}\n`); // alive: the process that started this test
    const time = fakeTime();
    const locks = new ProjectLocks({ ...time, timeoutMs: 5_000, staleMs: 600_000 });
    let ran = false;
    const error = await locks
      .with(file, async () => {
        ran = true;
      })
      .catch((e: unknown) => e);
    expect(ran).toBe(false);
    expect(error).toMatchObject({ code: "checkpoint_busy", hint: expect.stringContaining(file) });
    expect(time.clock.now()).toBeGreaterThanOrEqual(1_005_000);
  });

  it("runs calls for one file in order inside a process", async () => {
    const file = join(tempDir(), "lock");
    const locks = new ProjectLocks({ ...fakeTime(), timeoutMs: 1000, staleMs: 600_000 });
    const order: string[] = [];
    const task = (name: string, delay: number) =>
      locks.with(file, async () => {
        order.push(`${name} start`);
        await new Promise((resolve) => setTimeout(resolve, delay));
        order.push(`${name} end`);
      });
    await Promise.all([task("a", 30), task("b", 1), task("c", 1)]);
    expect(order).toEqual(["a start", "a end", "b start", "b end", "c start", "c end"]);
  });
});
