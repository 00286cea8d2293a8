// The checkpoint store ignores everything a user, a system or a project could set for git: a
// hostile ~/.gitconfig, GIT_* variables pointing elsewhere, and a project's .gitattributes.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { CheckpointStore } from "./store.js";

afterEach(() => {
  vi.unstubAllEnvs();
});

/** A HOME whose git config would break or change every commit and checkout if it were read. */
function hostileHome(): { home: string; marker: string } {
  const home = tempDir("tenax-hostile-");
  const hooks = join(home, "hooks");
  const marker = join(home, "a-hook-ran");
  mkdirSync(hooks);
  for (const hook of ["pre-commit", "post-commit", "post-checkout", "reference-transaction"]) {
    writeFileSync(join(hooks, hook), `#!/bin/sh\ntouch '${marker}'\nexit 1\n`, { mode: 0o755 });
  }
  writeFileSync(
    join(home, ".gitconfig"),
    [
      "[core]",
      `\thooksPath = ${hooks}`,
      "\tautocrlf = true",
      "\teol = crlf",
      "[commit]",
      "\tgpgSign = true",
      "[gpg]",
      "\tprogram = /bin/false",
      "[user]",
      "\tuseConfigOnly = true",
      "[init]",
      `\ttemplateDir = ${join(home, "no-such-template")}`,
      "",
    ].join("\n"),
  );
  return { home, marker };
}

describe("checkpoint git isolation", () => {
  it("snapshots and restores exact bytes under a hostile git config and environment", async () => {
    const { home, marker } = hostileHome();
    const dir = tempDir("tenax-project-");
    const crlf = "line one\r\nline two\r\n";
    const lf = "unix\nlines\n";
    writeFileSync(join(dir, ".gitattributes"), "* text eol=crlf\n*.txt filter=evil ident\n");
    writeFileSync(join(dir, "crlf.txt"), crlf);
    writeFileSync(join(dir, "lf.md"), lf);
    writeFileSync(join(dir, "id.txt"), "$Id$\n");

    vi.stubEnv("HOME", home);
    vi.stubEnv("XDG_CONFIG_HOME", home);
    vi.stubEnv("GIT_CONFIG_GLOBAL", join(home, ".gitconfig"));
    vi.stubEnv("GIT_CONFIG_PARAMETERS", "'filter.evil.clean'='false' 'commit.gpgsign'='true'");
    vi.stubEnv("GIT_DIR", join(home, "elsewhere.git"));
    vi.stubEnv("GIT_WORK_TREE", home);
    vi.stubEnv("GIT_INDEX_FILE", join(home, "elsewhere-index"));
    vi.stubEnv("GIT_OBJECT_DIRECTORY", join(home, "objects"));

    // The hostile settings are real: a plain git commit in this environment fails.
    const plain = spawnSync("git", ["commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "-m", "x"], {
      env: { ...process.env, GIT_DIR: undefined, GIT_OBJECT_DIRECTORY: undefined },
      cwd: dir,
      encoding: "utf8",
    });
    expect(plain.status).not.toBe(0);

    const store = new CheckpointStore({ home: tempDir("tenax-home-") });
    const result = await store.snapshot(dir, "hostile");
    expect(result.status).toBe("created");
    if (result.status !== "created") return;

    writeFileSync(join(dir, "crlf.txt"), "changed");
    writeFileSync(join(dir, "lf.md"), "changed");
    writeFileSync(join(dir, "id.txt"), "changed");
    await store.restore(dir, result.snapshot.id);
    expect(readFileSync(join(dir, "crlf.txt"), "utf8")).toBe(crlf);
    expect(readFileSync(join(dir, "lf.md"), "utf8")).toBe(lf);
    expect(readFileSync(join(dir, "id.txt"), "utf8")).toBe("$Id$\n");
    expect(() => readFileSync(marker)).toThrow();
    expect(() => readFileSync(join(home, "elsewhere-index"))).toThrow();
  });
});
