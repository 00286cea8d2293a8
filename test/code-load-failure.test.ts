// A part loaded on demand whose code is missing (a build cut short, a half-copied install): the
// process says what could not load and how to fix it, and ends, rather than hanging or blaming
// a bug. Run on a copy of the build with a chunk removed: the gateway with Telegram configured
// (its adapter is loaded only then), and a read command on a PostgreSQL profile.
import { spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cliEnvironment, ROOT, requireBuild } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

/** A copy of the built CLI (bin/, dist/bundle/, node_modules linked) without the chunk that defines `marker`. */
function buildWithout(marker: string): string {
  const root = tempDir("tenax-broken-build-");
  cpSync(join(ROOT, "bin"), join(root, "bin"), { recursive: true });
  cpSync(join(ROOT, "dist", "bundle"), join(root, "dist", "bundle"), { recursive: true });
  writeFileSync(join(root, "package.json"), readFileSync(join(ROOT, "package.json")));
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  const dir = join(root, "dist", "bundle");
  const chunks = readdirSync(dir).filter(
    (f) => f.endsWith(".js") && readFileSync(join(dir, f), "utf8").includes(marker),
  );
  expect(chunks).toHaveLength(1);
  rmSync(join(dir, chunks[0] as string));
  return root;
}

function run(root: string, home: string, args: string[]) {
  return spawnSync(process.execPath, [join(root, "bin", "tenax.js"), ...args], {
    env: cliEnvironment(home),
    encoding: "utf8",
    timeout: 30_000,
  });
}

describe("code that cannot load", () => {
  beforeAll(requireBuild);

  it("a gateway whose Telegram adapter is missing says so, names the fix and exits 1", () => {
    const root = buildWithout("var TelegramAdapter = class");
    const { home } = profileWith(
      'platforms:\n  telegram: { token: "123456789:AAEabcdefghijklmnopqrstuvwxyz012345", api_root: "http://127.0.0.1:9", allowed_users: [1] }\n',
    );
    const result = run(root, home, ["gateway", "run", "--port", "0"]);
    expect(result.signal).toBeNull(); // ended by itself, not by the timeout
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/could not load the code of the Telegram platform: .*adapter/);
    expect(result.stderr).toContain("npm install");
  });

  it("a PostgreSQL profile whose store engine is missing says so and exits 1", () => {
    const root = buildWithout("async function openPostgresStore(");
    const { home } = profileWith('store: { engine: postgres, url: "postgres://u:secret@127.0.0.1:9/db" }\n');
    const result = run(root, home, ["sessions", "list"]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/could not load the code of the PostgreSQL store engine/);
    expect(result.stderr).not.toContain("secret");
    expect(result.stderr).toContain("npm install");
  });
});
