// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import { describe, expect, it } from "vitest";
import { interpolate } from "./interpolate.js";

const vars: Record<string, string> = { A: "alpha", EMPTY: "" };
const lookup = (name: string) => vars[name];

describe("interpolate", () => {
  it("replaces ${VAR} anywhere in the string", () => {
    expect(interpolate("x-${A}-y", lookup)).toEqual({ ok: true, value: "x-alpha-y", substituted: true });
  });

  it("uses the default when the variable is unset or empty", () => {
    expect(interpolate("${NOPE:-d1}/${EMPTY:-d2}/${A:-d3}", lookup)).toMatchObject({ value: "d1/d2/alpha" });
  });

  it("keeps $${ as a literal ${ and other dollars as they are", () => {
    expect(interpolate("$${A} costs $5", lookup)).toEqual({
      ok: true,
      value: "${A} costs $5",
      substituted: false,
    });
  });

  it("lists every unset variable", () => {
    expect(interpolate("${X}${A}${Y}", lookup)).toEqual({
      ok: false,
      problem: "${X}, ${Y} are not set",
      missing: ["X", "Y"],
    });
  });

  it("rejects an unterminated or malformed reference", () => {
    expect(interpolate("${A", lookup)).toMatchObject({
      ok: false,
      problem: expect.stringContaining('no closing "}"'),
    });
    expect(interpolate("${1X}", lookup)).toMatchObject({
      ok: false,
      problem: expect.stringContaining("not a variable"),
    });
  });
});
