import { describe, expect, it } from "vitest";
import { Passes } from "./passes.js";

describe("Passes", () => {
  it("runs one pass at a time; kicks during a pass make exactly one more; a failing pass is not thrown", async () => {
    let runs = 0;
    let release: () => void = () => {};
    let stopped = false;
    const passes = new Passes(
      async () => {
        runs++;
        if (runs === 1) await new Promise<void>((r) => (release = r));
        if (runs === 2) throw new Error("a failed pass");
      },
      () => stopped,
    );
    const first = passes.kick();
    const during = [passes.kick(), passes.kick(), passes.kick()];
    expect(runs).toBe(1);
    release();
    await Promise.all([first, ...during]);
    expect(runs).toBe(2);
    await passes.kick();
    expect(runs).toBe(3);
    stopped = true;
    await passes.kick();
    expect(runs).toBe(3);
  });
});
