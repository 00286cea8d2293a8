import { describe, expect, it } from "vitest";
import { idTime, newId } from "./ids.js";

describe("newId", () => {
  it("sorts by time and never repeats, across many pool refills", () => {
    const ids = Array.from({ length: 5000 }, (_, i) => newId("m_", 1_700_000_000_000 + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a.slice(0, 12).localeCompare(b.slice(0, 12)))).toEqual(ids);
    expect(ids[0]).toMatch(/^m_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it("reads back the time an id was made, and nothing from what is not an id", () => {
    const at = 1_712_345_678_901;
    expect(idTime(newId("i_", at), "i_")).toBe(at);
    expect(idTime(newId("", 0))).toBe(0);
    expect(idTime(newId("s_", at), "i_")).toBeNull();
    expect(idTime("i_short", "i_")).toBeNull();
    expect(idTime(`i_${"u".repeat(26)}`, "i_")).toBeNull();
  });
});
