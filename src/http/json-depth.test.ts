// The depth check on raw request bytes agrees with the depth of the parsed value, whatever the
// strings hold (brackets, quotes, backslashes, multi-byte characters). Seeded: TENAX_SEED=N replays.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { depthPastLimit, MAX_JSON_DEPTH } from "./json-depth.js";

const SEED = process.env.TENAX_SEED ? Number(process.env.TENAX_SEED) : Math.floor(Math.random() * 2 ** 31);

/** Nesting depth of a parsed JSON value (a scalar is 0), walked without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [v, d] = item;
    if (v === null || typeof v !== "object") continue;
    deepest = Math.max(deepest, d + 1);
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("depthPastLimit", () => {
  it("allows exactly the limit and names the byte where a body first goes past it", () => {
    const at = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(depthPastLimit(bytes(at(MAX_JSON_DEPTH)))).toBe(-1);
    expect(depthPastLimit(bytes(at(MAX_JSON_DEPTH + 1)))).toBe(MAX_JSON_DEPTH);
    expect(depthPastLimit(bytes(`{"metadata":${at(5000)}}`))).toBe(12 + MAX_JSON_DEPTH - 1);
    // Siblings do not add up: a thousand arrays side by side are one level.
    expect(depthPastLimit(bytes(`[${"[],".repeat(1000)}[]]`), 2)).toBe(-1);
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const text = JSON.stringify({ a: `${"[{".repeat(200)}\\"[[[\\\\"`, b: ['"]', "\\", "é[💥{"] });
    expect(depthPastLimit(bytes(text), 2)).toBe(-1);
    expect(depthPastLimit(bytes(text), 1)).toBe(text.indexOf('["'));
  });

  it("agrees with the parsed depth for any JSON text", () => {
    console.log(`json depth seed=${SEED}`);
    const unit = fc.constantFrom("[", "]", "{", "}", '"', "\\", "a", "é", "💥", " ");
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 12, stringUnit: unit }),
        fc.integer({ min: 0, max: 12 }),
        fc.constantFrom(undefined, 1, "\t"),
        (value, max, indent) => {
          const text = JSON.stringify(value, null, indent);
          const past = depthPastLimit(bytes(text), max);
          expect(past >= 0, `seed=${SEED} max=${max} ${text}`).toBe(depthOf(value) > max);
          if (past >= 0) expect("[{").toContain(String.fromCharCode(bytes(text)[past] ?? 0));
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});
