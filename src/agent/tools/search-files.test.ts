import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { FileRoots } from "./file-roots.js";
import { searchFilesTool } from "./search-files.js";

const tool = searchFilesTool();

interface Result {
  matches: Array<{ path: string; line: number; text: string }>;
  truncated: boolean;
  files_searched: number;
  skipped: { binary: number; large: number; unreadable: number; secret: number };
  note?: string;
}

function project(): string {
  const dir = tempDir();
  const files: Record<string, string | Buffer> = {
    "src/a.ts": "export const alpha = 1;\n// TODO: beta\n",
    "src/deep/b.ts": "const gamma = alpha + 2; // TODO later\n",
    "src/c.js": "TODO in js\n",
    "README.md": "Alpha (a.k.a. TODO)\n",
    "node_modules/dep/index.ts": "TODO in a dependency\n",
    ".git/config": "TODO in git\n",
    "image.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x54, 0x4f, 0x44, 0x4f]),
  };
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

const run = async (args: Record<string, unknown>, cwd: string, roots: string[] = []) =>
  (await (roots.length === 0 ? tool : searchFilesTool(new FileRoots({ mode: "roots", roots }))).run(
    args,
    toolContext(cwd),
  )) as Result;

describe("search_files", () => {
  it("finds matching lines in order, skipping .git, node_modules and binary files", async () => {
    const cwd = project();
    const result = await run({ pattern: "TODO" }, cwd);
    expect(result.matches).toEqual([
      { path: "README.md", line: 1, text: "Alpha (a.k.a. TODO)" },
      { path: join("src", "a.ts"), line: 2, text: "// TODO: beta" },
      { path: join("src", "c.js"), line: 1, text: "TODO in js" },
      { path: join("src", "deep", "b.ts"), line: 1, text: "const gamma = alpha + 2; // TODO later" },
    ]);
    expect(result.truncated).toBe(false);
    expect(result.skipped.binary).toBe(1);
    expect(result.files_searched).toBe(4);
  });

  it("takes a regular expression, or the pattern literally, and ignores case on request", async () => {
    const cwd = project();
    const regex = await run({ pattern: "al(pha|xx) =" }, cwd);
    expect(regex.matches.map((m) => m.path)).toEqual([join("src", "a.ts")]);
    const literal = await run({ pattern: "(a.k.a.", literal: true }, cwd);
    expect(literal.matches.map((m) => m.path)).toEqual(["README.md"]);
    const anyCase = await run({ pattern: "alpha", case_sensitive: false }, cwd);
    expect(anyCase.matches).toHaveLength(3);
  });

  it("filters files by glob, by name or by path", async () => {
    const cwd = project();
    const byName = await run({ pattern: "TODO", glob: "*.ts" }, cwd);
    expect(byName.matches.map((m) => m.path)).toEqual([join("src", "a.ts"), join("src", "deep", "b.ts")]);
    const byPath = await run({ pattern: "TODO", glob: "src/*.{ts,js}" }, cwd);
    expect(byPath.matches.map((m) => m.path)).toEqual([join("src", "a.ts"), join("src", "c.js")]);
  });

  it("searches under a given folder or in one file", async () => {
    const cwd = project();
    const under = await run({ pattern: "TODO", path: "src/deep" }, cwd);
    expect(under.matches.map((m) => m.path)).toEqual([join("src", "deep", "b.ts")]);
    // A file of another folder, a root of its own.
    const one = await run({ pattern: "TODO", path: join(cwd, "README.md") }, tempDir(), [
      join(cwd, "README.md"),
    ]);
    expect(one.matches).toEqual([{ path: join(cwd, "README.md"), line: 1, text: "Alpha (a.k.a. TODO)" }]);
  });

  it("searches nowhere outside the roots: not a folder elsewhere, nor one a link inside leads to", async () => {
    const cwd = project();
    const elsewhere = project();
    symlinkSync(elsewhere, join(cwd, "linked"));
    await expect(run({ pattern: "TODO", path: elsewhere }, cwd)).rejects.toThrow(
      `search_files: "${elsewhere}" is outside the working folder ${cwd} and tools.files.roots`,
    );
    await expect(run({ pattern: "TODO", path: "linked" }, cwd)).rejects.toThrow(
      `search_files: "linked" (${join(cwd, "linked")}) leads to ${elsewhere}, which is outside`,
    );
    await expect(run({ pattern: "TODO", path: "../" }, cwd)).rejects.toThrow(/is outside the working folder/);
    // The walk of the working folder does not follow the link out either.
    const walked = await run({ pattern: "TODO" }, cwd);
    expect(walked.matches.map((m) => m.path).filter((path) => path.startsWith("linked"))).toEqual([]);
    // A root lets it in.
    const rooted = await run({ pattern: "TODO", path: "linked" }, cwd, [elsewhere]);
    expect(rooted.matches.map((m) => m.path)).toContain(join("linked", "README.md"));
  });

  it("skips secret files and SSH folders inside the roots, counting them, and refuses one by name", async () => {
    const cwd = project();
    writeFileSync(join(cwd, "server.pem"), "TODO -----BEGIN PRIVATE KEY-----\n");
    writeFileSync(join(cwd, "id_ed25519"), "TODO -----BEGIN OPENSSH PRIVATE KEY-----\n");
    mkdirSync(join(cwd, "home", ".ssh"), { recursive: true });
    writeFileSync(join(cwd, "home", ".ssh", "config"), "TODO Host *\n");
    const result = await run({ pattern: "PRIVATE|Host|TODO" }, cwd);
    expect(result.matches.map((m) => m.path)).toEqual([
      "README.md",
      join("src", "a.ts"),
      join("src", "c.js"),
      join("src", "deep", "b.ts"),
    ]);
    expect(result.skipped.secret).toBe(3);
    await expect(run({ pattern: "KEY", path: "server.pem" }, cwd)).rejects.toThrow(
      /search_files: "server.pem" .* is a .pem file \(keys and certificates\), a secret file/,
    );
    await expect(run({ pattern: "Host", path: "home/.ssh" }, cwd)).rejects.toThrow(/inside the SSH folder/);
    // Named as a root, the SSH folder is searched.
    const named = await run({ pattern: "Host", path: "home/.ssh" }, cwd, [join(cwd, "home", ".ssh")]);
    expect(named.matches.map((m) => m.path)).toEqual([join("home", ".ssh", "config")]);
  });

  it("stops at max_results and says it was truncated", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "many.txt"), "hit\n".repeat(50));
    const result = await run({ pattern: "hit", max_results: 10 }, cwd);
    expect(result.matches).toHaveLength(10);
    expect(result.truncated).toBe(true);
    expect(result.note).toContain("stopped at 10 matches");
  });

  it("skips files over the size bound", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "big.txt"), `${"x".repeat(3 * 1024 * 1024)}\nneedle\n`);
    writeFileSync(join(cwd, "small.txt"), "needle\n");
    const result = await run({ pattern: "needle" }, cwd);
    expect(result.matches.map((m) => m.path)).toEqual(["small.txt"]);
    expect(result.skipped.large).toBe(1);
  });

  it("refuses an invalid regular expression, a missing folder and bad arguments", async () => {
    const cwd = project();
    await expect(run({ pattern: "(unclosed" }, cwd)).rejects.toThrow(
      /argument "pattern" is not a valid regular expression .*set literal: true/,
    );
    await expect(run({ pattern: "x", path: "nowhere" }, cwd)).rejects.toThrow(
      `search_files: cannot search "nowhere" (${join(cwd, "nowhere")}): it does not exist`,
    );
    await expect(run({}, cwd)).rejects.toThrow('argument "pattern": is required');
    await expect(run({ pattern: "x", max_results: 0 }, cwd)).rejects.toThrow(/argument "max_results": /);
    await expect(run({ pattern: "x", regex: true }, cwd)).rejects.toThrow('Unrecognized key: "regex"');
  });
});
