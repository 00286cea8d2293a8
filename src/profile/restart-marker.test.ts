import { existsSync, mkdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { markRestartRequested, takeRestartRequested } from "./restart-marker.js";

describe("restart marker", () => {
  it("is believed once, while fresh, and removed when read", () => {
    const paths = tempProfile();
    mkdirSync(paths.dir, { recursive: true });
    const now = Date.parse("2026-12-03T06:00:00Z");
    expect(takeRestartRequested(paths, now)).toBe(false);
    markRestartRequested(paths, now);
    expect(takeRestartRequested(paths, now + 10_000)).toBe(true);
    expect(existsSync(paths.restartRequested)).toBe(false);
    expect(takeRestartRequested(paths, now + 10_000)).toBe(false);
    // A restart asked for long ago that never came is a plain stop now.
    markRestartRequested(paths, now);
    expect(takeRestartRequested(paths, now + 10 * 60_000)).toBe(false);
    expect(existsSync(paths.restartRequested)).toBe(false);
  });
});
