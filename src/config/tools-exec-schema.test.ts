import { describe, expect, it } from "vitest";
import { execSchema } from "./tools-exec-schema.js";

function issues(input: unknown): Array<{ path: string; message: string }> {
  const result = execSchema.safeParse(input);
  if (result.success) return [];
  return result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
}

describe("tools.exec", () => {
  it("asks by default, allows nothing extra and waits 300 s for an approval", () => {
    expect(execSchema.parse({})).toEqual({
      mode: "ask",
      allow: [],
      approval_timeout: 300,
      env: [],
      sandbox: "auto",
    });
  });

  it("runs commands in a sandbox where one is available, by default", () => {
    for (const sandbox of ["auto", "bwrap", "none"])
      expect(execSchema.parse({ sandbox }).sandbox).toBe(sandbox);
  });

  it("takes each mode, patterns and a timeout", () => {
    for (const mode of ["deny", "allowlist", "ask", "full"])
      expect(execSchema.parse({ mode }).mode).toBe(mode);
    expect(execSchema.parse({ allow: ["npm test", "npm run *"], approval_timeout: 60 })).toMatchObject({
      allow: ["npm test", "npm run *"],
      approval_timeout: 60,
    });
  });

  it("names what is wrong with each key", () => {
    expect(issues({ mode: "yolo" })).toEqual([
      { path: "mode", message: "expected one of deny, allowlist, ask, full" },
    ]);
    expect(issues({ allow: "npm test" })).toEqual([
      { path: "allow", message: "expected a list of command patterns" },
    ]);
    expect(issues({ allow: ["npm test", "  "] })).toEqual([
      { path: "allow.1", message: expect.stringContaining("not an empty string") },
    ]);
    expect(issues({ allow: [3] })).toEqual([
      { path: "allow.0", message: expect.stringContaining("command pattern") },
    ]);
    for (const approval_timeout of [0, -5, 1.5, "300"])
      expect(issues({ approval_timeout })).toEqual([
        { path: "approval_timeout", message: "expected a number of seconds (a positive integer)" },
      ]);
    expect(issues({ approvals: 3 })).toEqual([{ path: "", message: expect.stringContaining("approvals") }]);
    expect(issues({ sandbox: "firejail" })).toEqual([
      { path: "sandbox", message: "expected one of auto, bwrap, none" },
    ]);
  });
});
