// Where the default profile lives: TENAX_HOME when set (relative to the folder it is given in),
// else ~/.tenax; an empty HOME never puts it in the folder a command happens to run in.

import { homedir, userInfo } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveHome } from "./paths.js";

describe("resolveHome", () => {
  it("takes TENAX_HOME, resolved, and ~/.tenax without it (a blank TENAX_HOME is none)", () => {
    expect(resolveHome({ TENAX_HOME: "/srv/tenax" })).toBe("/srv/tenax");
    expect(resolveHome({ TENAX_HOME: "rel" })).toBe(resolve("rel"));
    expect(resolveHome({ TENAX_HOME: "  " })).toBe(join(homedir(), ".tenax"));
  });

  it("with HOME empty, uses the account's home, never a relative .tenax", () => {
    const saved = process.env.HOME;
    process.env.HOME = "";
    try {
      const home = resolveHome({});
      expect(isAbsolute(home)).toBe(true);
      expect(home).toBe(join(userInfo().homedir, ".tenax"));
    } finally {
      process.env.HOME = saved;
    }
  });
});
