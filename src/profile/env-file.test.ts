import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome, thrown } from "../../test/helpers/temp-home.js";
import { loadEnvFile, lookupVariable, parseEnvFile } from "./env-file.js";

describe("parseEnvFile", () => {
  it("reads KEY=VALUE lines, skipping comments and blank lines", () => {
    const text = "# a comment\n\nA=1\n  B = two words  \nexport C=3\nD=\nE=x # trailing comment\nF=a#b\n";
    expect(parseEnvFile(text, "/p/.env")).toEqual({
      A: "1",
      B: "two words",
      C: "3",
      D: "",
      E: "x",
      F: "a#b",
    });
  });

  it("takes single quotes literally and expands escapes in double quotes", () => {
    const text = `S='a\\nb $x # not a comment'\nD="line1\\nline2\\t\\"q\\" \\\\"\nH="v" # comment\n`;
    expect(parseEnvFile(text, "/p/.env")).toEqual({
      S: "a\\nb $x # not a comment",
      D: 'line1\nline2\t"q" \\',
      H: "v",
    });
  });

  it("accepts CRLF line ends and keeps the last of a repeated key", () => {
    expect(parseEnvFile("A=1\r\nA=2\r\n", "/p/.env")).toEqual({ A: "2" });
  });

  it.each([
    ["no equals sign", "JUSTAKEY", "expected KEY=VALUE"],
    ["a bad key", "1ABC=x", "the key must be letters"],
    ["an unterminated quote", 'K="open', 'no closing "'],
    ["text after a quote", "K='a' b", "unexpected text after the closing '"],
  ])("rejects %s with the file and line number", (_what, line, problem) => {
    const error = thrown(() => parseEnvFile(`OK=1\n\n${line}\n`, "/p/.env"));
    expect(error.message).toContain(problem);
    expect(error.message.startsWith("env file error: /p/.env:3: ")).toBe(true);
    expect(error.hint).toContain("line 3 of /p/.env");
  });

  it("never echoes a malformed line, which may hold a secret", () => {
    const error = thrown(() => parseEnvFile('API_KEY="sk-secret-123\n', "/p/.env"));
    expect(error.message).not.toContain("sk-secret-123");
  });
});

describe("loadEnvFile", () => {
  it("treats a missing file as no variables", () => {
    expect(loadEnvFile(join(tempHome(), ".env"))).toEqual({});
  });

  it("reads a file from disk", () => {
    const file = join(tempHome(), ".env");
    writeFileSync(file, "K=v\n");
    expect(loadEnvFile(file)).toEqual({ K: "v" });
  });
});

describe("lookupVariable", () => {
  it("prefers the process environment, even an empty value, over .env", () => {
    expect(lookupVariable("K", { K: "env" }, { K: "file" })).toBe("env");
    expect(lookupVariable("K", { K: "" }, { K: "file" })).toBe("");
    expect(lookupVariable("K", {}, { K: "file" })).toBe("file");
    expect(lookupVariable("toString", {}, {})).toBeUndefined();
    expect(lookupVariable("toString", process.env, {})).toBeUndefined();
  });
});
