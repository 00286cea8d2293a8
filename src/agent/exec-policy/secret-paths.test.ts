// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell command lines, whose ${NAME}s are the point
// The exec policy against the shapes a prompt-injected model gives a read of Tenax's secrets
// (variables, `~`, `cd`, relative paths, patterns, links, /proc), on a real folder tree: each is
// held for an approval, and ordinary reads of a project still run.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandPlace } from "../tools/secret-files.js";
import { type ExecMode, judgeCommand } from "./index.js";

const root = mkdtempSync(join(tmpdir(), "tenax-secret-paths-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const home = join(root, "home");
const tenax = join(home, ".tenax");
const work = join(tenax, "profiles", "work");
const project = join(home, "project");
for (const dir of [work, join(project, "src"), join(home, ".ssh")]) mkdirSync(dir, { recursive: true });
writeFileSync(join(tenax, ".env"), "MAIN_KEY=zq8Hk2pLm4Rt7Vw9\n");
writeFileSync(join(tenax, "config.yaml"), "model: {}\n");
writeFileSync(join(work, ".env"), "OTHER=1\n");
writeFileSync(join(project, ".env"), "PROJECT_SETTING=1\n");
writeFileSync(join(project, "src", "a.ts"), "export {};\n");
writeFileSync(join(project, "list"), ".env\n");
symlinkSync(join(tenax, ".env"), join(project, "link"));

/** The environment a command gets: HOME, and the mark naming the profile's folder. */
const env = { HOME: home, PATH: "/usr/bin:/bin", TENAX_PROFILE_DIR: tenax };

function judged(command: string, cwd = project, mode: ExecMode = "ask") {
  return judgeCommand(command, {
    mode,
    allow: [],
    place: commandPlace(cwd, { home: tenax, dir: tenax }, env),
  });
}

describe("a command that reaches a secret however it names it", () => {
  it.each([
    ['grep -o . "$TENAX_PROFILE_DIR/.env"', "a variable"],
    ["grep -o . ${TENAX_PROFILE_DIR}/.env", "a variable in braces"],
    ["cd ~/.tenax && cut -c 11-40 .env", "cd, then a relative path"],
    ['cd "$TENAX_PROFILE_DIR"; cut -c 11-40 .env', "cd to a variable"],
    ["cd ~ && cd .tenax && cut -c 3- .env", "cd twice"],
    ["cd ~/project/../.tenax; head -c 40 config.yaml", "cd through .."],
    ["grep -o . ~/.tenax/.e*", "a pattern"],
    ["cat ~/.tenax/profiles/*/.env", "a pattern over the profiles"],
    ["D=~/.tenax; cut -c 5- $D/.env", "a variable the line sets"],
    ['export D=$HOME/.tenax; cut -c 5- "$D/.env"', "export"],
    ['for f in ~/.tenax/.env; do cut -c 3- "$f"; done', "a loop's variable"],
    ["cat link", "a link to it"],
    ["cut -c 1-9 < ~/.tenax/.env", "a redirection"],
    ["xargs -a ~/.tenax/.env echo", "a wrapper's own option"],
    ["env -C ~/.tenax cat .env", "a wrapper's working folder"],
    ["git -C ~/.tenax diff --no-index .env /dev/null", "a program's working folder"],
    ["sh -c 'cd ~/.tenax; cat .env'", "a script of sh -c"],
    ["cat /proc/1/environ", "/proc of pid 1"],
    ["grep -ao . /proc/self/environ", "/proc/self"],
    ["cat /proc/*/environ", "/proc as a pattern"],
    ["tr '\\0' '\\n' < /proc/self/../1/environ", "/proc through .."],
    ["head -c 100 /proc/1/task/1/environ", "a thread's environment"],
    ["grep -r KEY ~", "a recursive read of the home folder"],
    ["diff -r ~/.tenax /tmp", "a recursive diff"],
  ])("%s (%s) waits for an approval", (command) => {
    const judgement = judged(command);
    expect(judgement.decision).toBe("ask");
    expect(judgement.dangers.map((d) => d.rule)).toContain("secret-file");
    expect(judged(command, project, "allowlist").decision).not.toBe("run");
  });

  it.each([
    ["cut -c 11-40 .env", tenax],
    ["grep -o . *", tenax],
    ["grep -rn KEY", home],
    ["grep -rn KEY .", home],
    ["head -3 ../../.env", work],
  ])("%s in %s waits for an approval", (command, cwd) => {
    expect(judged(command, cwd).dangers.map((d) => d.rule)).toContain("secret-file");
  });

  it.each([
    ["grep -ao . /proc/$PPID/environ", "$PPID"],
    ["cat $(echo .env)", "a substitution"],
    ['cat "$NOT_SET/.env"', "a variable nobody set"],
    ['read F < list; cat "$F"', "a variable read when it runs"],
    ["cd - && cat .env", "cd -"],
    ["cd $(mktemp -d) && cat x", "cd to a substitution"],
    ["echo ~/.tenax/.env | xargs cat", "arguments from its input"],
    ["cat ~op/.tenax/.env", "another user's home"],
    ['cat "${TENAX_PROFILE_DIR:-/x}/.env"', "an expansion with an operator"],
    ["source ./vars.sh; cat $HOME/x", "a line that sources a script"],
  ])("%s (%s) is unknown until it runs, so it waits for an approval", (command) => {
    const judgement = judged(command);
    expect(judgement.decision).toBe("ask");
    expect(judgement.dangers.map((d) => d.rule)).toEqual(expect.arrayContaining(["unknown-path"]));
    expect(judgement.reason).toContain("when it runs");
  });

  it.each([
    "cat src/a.ts",
    "cat .env",
    "grep -rn TODO src",
    "ls ~/.tenax",
    "wc -l src/*.ts",
    "cat src/*",
    "cd src && cat a.ts",
    'head -n 5 "$HOME/project/src/a.ts"',
    "echo $RANDOM $PPID",
    "git log --oneline -5",
    "ls -la | grep -c x",
    "find . -name '*.ts'",
    "date +%s",
  ])("%s still runs without one", (command) => {
    const judgement = judged(command);
    expect(judgement.dangers).toEqual([]);
    expect(judgement.decision).toBe("run");
  });

  it("resolves what the line sets and finds no secret in it (the assignment still asks, as ever)", () => {
    expect(judged('X=src; cat "$X/a.ts"').dangers).toEqual([]);
    expect(judged("cat *").dangers.map((d) => d.why)).toEqual([expect.stringContaining(".env")]);
  });

  it("names the rule, what the secret is and where the command reached it", () => {
    const judgement = judged('grep -o . "$TENAX_PROFILE_DIR/.env"');
    expect(judgement.reason).toContain("secret-file");
    expect(judgement.reason).toContain("a Tenax profile's .env");
    expect(judged("cat /proc/1/environ").reason).toContain("/proc/PID/");
    expect(judged("grep -r KEY ~").reason).toContain(`every file under ${home}`);
  });
});
