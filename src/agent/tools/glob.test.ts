import { describe, expect, it } from "vitest";
import { compileGlob } from "./glob.js";

describe("compileGlob", () => {
  it("matches a glob without a slash against the file name anywhere", () => {
    const glob = compileGlob("*.ts");
    expect(glob.matches("a.ts")).toBe(true);
    expect(glob.matches("src/deep/b.ts")).toBe(true);
    expect(glob.matches("a.tsx")).toBe(false);
    expect(glob.matches("a.ts.bak")).toBe(false);
  });

  it("keeps * and ? within a segment and lets ** cross folders", () => {
    expect(compileGlob("src/*.ts").matches("src/a.ts")).toBe(true);
    expect(compileGlob("src/*.ts").matches("src/x/a.ts")).toBe(false);
    expect(compileGlob("src/**/*.ts").matches("src/a.ts")).toBe(true);
    expect(compileGlob("src/**/*.ts").matches("src/x/y/a.ts")).toBe(true);
    expect(compileGlob("src/**").matches("src/x/y")).toBe(true);
    expect(compileGlob("?.md").matches("a.md")).toBe(true);
    expect(compileGlob("?.md").matches("ab.md")).toBe(false);
  });

  it("supports {a,b} and character classes, and takes other characters literally", () => {
    const glob = compileGlob("*.{ts,js}");
    expect(glob.matches("a.js")).toBe(true);
    expect(glob.matches("a.py")).toBe(false);
    expect(compileGlob("file[0-9].txt").matches("file7.txt")).toBe(true);
    expect(compileGlob("file[!0-9].txt").matches("file7.txt")).toBe(false);
    expect(compileGlob("a+b(1).txt").matches("a+b(1).txt")).toBe(true);
    expect(compileGlob("a.txt").matches("abtxt")).toBe(false);
  });
});
