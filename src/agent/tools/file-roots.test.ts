import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import type { FilesConfig } from "../../config/tools-files-schema.js";
import { FileRoots } from "./file-roots.js";
import { resolveToolPath } from "./paths.js";

/**
 * A project with links out, a folder beside it, a Tenax home with two profiles and a user home
 * with an SSH folder, all real files in one temp folder.
 */
function world() {
  const base = realpathSync(tempDir());
  const at = (...parts: string[]) => join(base, ...parts);
  const files = [
    "project/a.txt",
    "project/server.pem",
    "project/id_rsa",
    "project/id_rsa.pub",
    "project/id_utils.ts",
    "project/.env",
    "outside/o.txt",
    "outside/other.txt",
    "tenax/.env",
    "tenax/config.yaml",
    "tenax/state.db",
    "tenax/profiles/work/config.yaml",
    "tenax/profiles/work/state.db-wal",
    "user/.ssh/id_ed25519",
    "user/.ssh/config",
    "user/notes.txt",
  ];
  for (const file of files) {
    mkdirSync(join(base, file, ".."), { recursive: true });
    writeFileSync(at(file), "x");
  }
  symlinkSync(at("outside"), at("project/link"));
  symlinkSync(at("outside/o.txt"), at("project/filelink"));
  symlinkSync(at("outside/new.txt"), at("project/dangling"));
  symlinkSync(at("user/.ssh/id_ed25519"), at("project/key-link"));
  return { base, at, cwd: at("project") };
}

type Verdict = "ok" | "outside" | "secret";

async function verdict(
  w: ReturnType<typeof world>,
  given: string,
  config: Partial<FilesConfig> = {},
): Promise<Verdict> {
  const roots = new FileRoots(
    { mode: "roots", roots: [], ...config },
    { profile: { home: w.at("tenax"), dir: w.at("tenax") }, home: w.at("user") },
  );
  const scope = await roots.scope(w.cwd);
  try {
    await scope.judge("read_file", resolveToolPath(w.cwd, given));
    return "ok";
  } catch (error) {
    const rule = (error as { details?: { rule?: string } }).details?.rule;
    if (rule === "outside_roots") return "outside";
    if (rule === "secret_file") return "secret";
    throw error;
  }
}

describe("FileRoots", () => {
  type World = ReturnType<typeof world>;
  const table: Array<[string, Verdict, (w: World) => [string, Partial<FilesConfig>?]]> = [
    // Inside the working folder.
    ["a file of the working folder", "ok", () => ["a.txt"]],
    ["a file to be created in new folders", "ok", () => ["sub/new/file.txt"]],
    ["a .. that stays inside", "ok", () => ["sub/../a.txt"]],
    ["a public key", "ok", () => ["id_rsa.pub"]],
    ["a file named id_ that is no key", "ok", () => ["id_utils.ts"]],
    ["a project's own .env (no profile's)", "ok", () => [".env"]],
    // Outside, however it is spelled.
    ["../ out of the working folder", "outside", () => ["../outside/o.txt"]],
    ["an absolute path outside", "outside", (w) => [w.at("outside/o.txt")]],
    ["/etc/passwd", "outside", () => ["/etc/passwd"]],
    ["a file through a symlinked folder", "outside", () => ["link/o.txt"]],
    ["a new file through a symlinked folder", "outside", () => ["link/new.txt"]],
    ["a symlinked file", "outside", () => ["filelink"]],
    ["a dangling link whose target would be created outside", "outside", () => ["dangling"]],
    // Roots widen it.
    ["a root folder, by ../", "ok", (w) => ["../outside/o.txt", { roots: [w.at("outside")] }]],
    ["a root folder, through the link", "ok", (w) => ["link/new.txt", { roots: [w.at("outside")] }]],
    ["a root file", "ok", (w) => [w.at("outside/o.txt"), { roots: [w.at("outside/o.txt")] }]],
    [
      "the file beside a root file",
      "outside",
      (w) => [w.at("outside/other.txt"), { roots: [w.at("outside/o.txt")] }],
    ],
    ["a root starting with ~", "ok", (w) => [w.at("user/notes.txt"), { roots: ["~"] }]],
    // Full mode lifts the roots.
    ["/etc/passwd in full mode", "ok", () => ["/etc/passwd", { mode: "full" }]],
    ["../ in full mode", "ok", () => ["../outside/o.txt", { mode: "full" }]],
    // Secret files, inside the roots or not.
    ["a .pem in the working folder", "secret", () => ["server.pem"]],
    ["a private key in the working folder", "secret", () => ["id_rsa"]],
    ["a link in the working folder to an SSH key", "secret", () => ["key-link"]],
    ["/etc/shadow", "secret", () => ["/etc/shadow"]],
    ["/etc/shadow in full mode", "secret", () => ["/etc/shadow", { mode: "full" }]],
    ["/etc/gshadow in full mode", "secret", () => ["/etc/gshadow", { mode: "full" }]],
    ["Tenax's own environment in full mode", "secret", () => ["/proc/self/environ", { mode: "full" }]],
    ["another process's environment in full mode", "secret", () => ["/proc/1/environ", { mode: "full" }]],
    ["a thread's memory in full mode", "secret", () => ["/proc/1/task/1/mem", { mode: "full" }]],
    ["/proc/cpuinfo in full mode", "ok", () => ["/proc/cpuinfo", { mode: "full" }]],
    [
      "the profile's .env, its folder a root",
      "secret",
      (w) => [w.at("tenax/.env"), { roots: [w.at("tenax")] }],
    ],
    [
      "the profile's config.yaml in full mode",
      "secret",
      (w) => [w.at("tenax/config.yaml"), { mode: "full" }],
    ],
    ["the profile's state.db", "secret", (w) => [w.at("tenax/state.db"), { mode: "full" }]],
    [
      "another profile's config.yaml",
      "secret",
      (w) => [w.at("tenax/profiles/work/config.yaml"), { mode: "full" }],
    ],
    ["another profile's WAL", "secret", (w) => [w.at("tenax/profiles/work/state.db-wal"), { mode: "full" }]],
    ["~/.ssh/config, the home a root", "secret", (w) => [w.at("user/.ssh/config"), { roots: ["~"] }]],
    ["~/.ssh itself, the home a root", "secret", (w) => [w.at("user/.ssh"), { roots: ["~"] }]],
    // Only a root naming the secret itself allows it.
    [
      "the profile's .env named as a root",
      "ok",
      (w) => [w.at("tenax/.env"), { roots: [w.at("tenax/.env")] }],
    ],
    ["a .pem named as a root", "ok", (w) => ["server.pem", { roots: [w.at("project/server.pem")] }]],
    ["the SSH folder named as a root", "ok", (w) => [w.at("user/.ssh/id_ed25519"), { roots: ["~/.ssh"] }]],
    ["a link to a key, the SSH folder a root", "ok", () => ["key-link", { roots: ["~/.ssh"] }]],
    [
      "one SSH file named, another read",
      "secret",
      (w) => [w.at("user/.ssh/id_ed25519"), { roots: ["~/.ssh/config"] }],
    ],
  ];

  it.each(table)("%s: %s", async (_name, expected, row) => {
    const w = world();
    const [path, config] = row(w);
    expect(await verdict(w, path, config)).toBe(expected);
  });

  it("names the rule and the setting that would allow it", async () => {
    const w = world();
    const scope = await new FileRoots(undefined, {
      profile: { home: w.at("tenax"), dir: w.at("tenax") },
    }).scope(w.cwd);
    await expect(scope.judge("read_file", resolveToolPath(w.cwd, "/etc/passwd"))).rejects.toThrow(
      `read_file: "/etc/passwd" is outside the working folder ${w.cwd} and tools.files.roots; add ` +
        "/etc/passwd (or a folder holding it) to tools.files.roots in config.yaml, or set tools.files.mode: full",
    );
    await expect(scope.judge("write_file", resolveToolPath(w.cwd, "link/new.txt"))).rejects.toThrow(
      `write_file: "link/new.txt" (${w.at("project/link/new.txt")}) leads to ${w.at("outside/new.txt")}, ` +
        `which is outside the working folder ${w.cwd} and tools.files.roots`,
    );
    await expect(scope.judge("patch", resolveToolPath(w.cwd, w.at("tenax/.env")))).rejects.toThrow(
      `patch: "${w.at("tenax/.env")}" is a Tenax profile's .env (it holds the provider and gateway keys), ` +
        "a secret file the file tools refuse anywhere, even with tools.files.mode: full; to allow it, add " +
        `${w.at("tenax/.env")} itself to tools.files.roots in config.yaml`,
    );
  });
});
