import { describe, expect, it } from "vitest";
import { exclusionOf } from "./exclude.js";

describe("exclusionOf", () => {
  it.each([
    [".env", "file", "secret"],
    [".env.local", "file", "secret"],
    [".env", "folder", "secret"],
    ["server.pem", "file", "secret"],
    ["TLS.KEY", "file", "secret"],
    ["id_rsa", "file", "secret"],
    ["id_ed25519.pub", "file", "secret"],
    [".git", "folder", "version control"],
    [".git", "file", "version control"],
    ["node_modules", "folder", "dependencies"],
    ["node_modules", "symlink", "dependencies"],
    [".venv", "folder", "dependencies"],
    ["dist", "folder", "build output"],
    ["target", "folder", "build output"],
    ["__pycache__", "folder", "cache"],
  ] as const)("leaves out %s (%s) as %s", (name, type, kind) => {
    expect(exclusionOf(name, type)).toBe(kind);
  });

  it.each([
    ["build", "file"],
    ["dist", "file"],
    ["environment.ts", "file"],
    ["keys.ts", "file"],
    ["src", "folder"],
    ["env", "folder"],
  ] as const)("keeps %s (%s)", (name, type) => {
    expect(exclusionOf(name, type)).toBeNull();
  });
});
