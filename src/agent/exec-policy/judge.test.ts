import { describe, expect, it } from "vitest";
import { commandPlace } from "../tools/secret-files.js";
import { type ExecMode, judgeCommand, matchesPattern } from "./index.js";

/** `ls` inside `depth` levels of sh -c, each quoted for the one outside it. */
function nested(depth: number, command: string): string {
  let line = command;
  for (let i = 0; i < depth; i++) line = `sh -c '${line.replaceAll("'", "'\\''")}'`;
  return line;
}

const policy = (mode: ExecMode, allow: string[] = []) => ({ mode, allow });

describe("judgeCommand", () => {
  it.each([
    ["ls -la", "run", "run"],
    ["git status && git log --oneline | head -5", "run", "run"],
    ["cat a; grep -rn TODO src 2>/dev/null", "run", "run"],
    ["echo $(ls)", "run", "run"],
    ["bash -c 'ls'", "run", "run"],
    ["", "run", "run"],
    ["npm test", "ask", "deny"],
    ["ls && npm test", "ask", "deny"],
    ["echo hi > out.txt", "ask", "deny"],
    ["FOO=1 ls", "ask", "deny"],
    ["LD_PRELOAD=/tmp/x.so bash -c 'ls'", "ask", "deny"],
    ["env LD_PRELOAD=/tmp/x.so sh -c 'ls'", "ask", "deny"],
    ["LD_PRELOAD=/tmp/x.so bash <<< 'ls'", "ask", "deny"],
    ["PATH=/tmp/evil; ls", "ask", "deny"],
    ["$CMD x", "ask", "deny"],
    ["echo $(touch x)", "ask", "deny"],
    ['bash -c "$SCRIPT"', "ask", "deny"],
    ["bash script.sh", "ask", "deny"],
    ["sudo ls", "ask", "ask"],
    ["sudo rm x", "ask", "deny"],
    ["r? -rf x", "ask", "deny"],
    ["date -u +%s", "run", "run"],
    ["date -s 2020-01-01", "ask", "deny"],
    ["hostname -f", "run", "run"],
    ["hostname evil", "ask", "deny"],
    ["/bin/l* x", "ask", "deny"],
  ])("%s: %s in ask, %s in allowlist", (command, inAsk, inAllowlist) => {
    expect(judgeCommand(command, policy("ask")).decision).toBe(inAsk);
    expect(judgeCommand(command, policy("allowlist")).decision).toBe(inAllowlist);
    expect(judgeCommand(command, policy("full")).decision).toBe("run");
    expect(judgeCommand(command, policy("deny")).decision).toBe("deny");
  });

  it("follows sh -c a few levels deep, and never runs unasked what is nested deeper than it follows", () => {
    expect(judgeCommand(nested(3, "ls"), policy("allowlist")).decision).toBe("run");
    expect(judgeCommand(nested(3, "reboot"), policy("allowlist", ["*"])).dangers[0]?.rule).toBe("shutdown");
    expect(judgeCommand(nested(10, "ls"), policy("ask")).decision).toBe("ask");
    expect(judgeCommand(nested(10, "ls"), policy("allowlist", ["*"])).decision).toBe("deny");
  });

  it("runs everything in full, dangers included, and refuses everything in deny", () => {
    expect(judgeCommand("rm -rf /", policy("full"))).toEqual({
      decision: "run",
      reason: expect.stringContaining("tools.exec.mode is full"),
      dangers: [],
      unlisted: [],
      pattern: "",
    });
    expect(judgeCommand("ls", policy("deny"))).toMatchObject({
      decision: "deny",
      reason: expect.stringContaining("tools.exec.mode is deny"),
    });
  });

  it("lists what is neither read-only nor allowed, and names the setting in its reason", () => {
    const asked = judgeCommand("ls && npm run build && npm test", policy("ask", ["npm test"]));
    expect(asked).toMatchObject({
      decision: "ask",
      unlisted: ["npm run build"],
      pattern: "npm run build",
      dangers: [],
    });
    expect(asked.reason).toContain('"npm run build"');
    expect(asked.reason).toContain('add a pattern such as "npm run build" to tools.exec.allow');
    const refused = judgeCommand("npm run build", policy("allowlist"));
    expect(refused.decision).toBe("deny");
    expect(refused.reason).toContain("tools.exec.mode is allowlist");
    expect(refused.reason).toContain("set tools.exec.mode to ask");
  });

  it("runs what tools.exec.allow or an approval for always allows", () => {
    expect(judgeCommand("npm run build", policy("allowlist", ["npm run *"])).decision).toBe("run");
    expect(judgeCommand("npm run build", policy("allowlist"), ["npm run *"]).decision).toBe("run");
    expect(
      judgeCommand("cd app && npm ci && npm test", policy("allowlist", ["npm ci", "npm test"])).decision,
    ).toBe("run");
    expect(judgeCommand("env CI=1 npm test", policy("allowlist", ["CI=1 npm test"])).decision).toBe("run");
    expect(judgeCommand("env CI=1 npm test", policy("allowlist", ["npm test"])).decision).toBe("deny");
    expect(judgeCommand("/usr/bin/npm test", policy("allowlist", ["npm test"])).decision).toBe("run");
    expect(judgeCommand("/tmp/evil/npm test", policy("allowlist", ["npm test"])).decision).toBe("deny");
    expect(judgeCommand("$(echo npm) test", policy("allowlist", ["* test"])).decision).toBe("deny");
  });

  it("never lets a pattern make a dangerous command safe", () => {
    for (const allow of [["git *"], ["*"], ["git push *"]]) {
      const judged = judgeCommand("git push --force origin main", policy("allowlist", allow));
      expect(judged.decision).toBe("ask");
      expect(judged.unlisted).toEqual([]);
      expect(judged.dangers).toEqual([
        { rule: "force-push", text: "git push --force origin main", why: expect.any(String) },
      ]);
      expect(judged.reason).toContain("force-push");
      expect(judged.reason).toContain("tools.exec.mode full");
    }
    expect(judgeCommand("rm -rf /", policy("ask"), ["rm *"]).decision).toBe("ask");
  });

  it("never runs a command it cannot parse", () => {
    for (const mode of ["ask", "allowlist"] as const) {
      const judged = judgeCommand("echo 'unbalanced", policy(mode, ["*"]));
      expect(judged.decision).toBe(mode === "ask" ? "ask" : "deny");
      expect(judged.unlisted).toEqual(["echo 'unbalanced"]);
      expect(judged.pattern).toBe("");
      expect(judged.reason).toContain("could not be read as a shell command");
    }
    expect(judgeCommand("ls $(", policy("ask")).decision).toBe("ask");
  });

  it.each([
    ["npm run build", "npm run build"],
    ["npm test", "npm test"],
    ["rm build", "rm build"],
    ["rm -rf build", "rm -rf build"],
    ["make", "make"],
    ["./build.sh --fast", "./build.sh --fast"],
    ["CI=1 npm test", "CI=1 npm test"],
    ["timeout 60 npm test", "npm test"],
    ["ls && cargo build --release", "cargo build --release"],
    ["npm test > test.log 2>&1", "npm test > test.log"],
    ["ls", "ls"],
    // No pattern can say exactly these: a word with a space or a `*`, one known only when it
    // runs, arguments that arrive when it runs, a here-document.
    ["git commit -m 'fix it'", ""],
    ["rm *.o", ""],
    ["$CMD run", ""],
    ["rm $DIR/build", ""],
    ["find . -name '*.tmp' | xargs rm", ""],
    ["cat <<EOF > notes.txt\nhi\nEOF", ""],
    // Dangerous: asked for every run, so no pattern at all.
    ["rm -rf ~", ""],
    ["rm -rf /", ""],
    ["git push --force origin main", ""],
    ["sudo apt-get update", ""],
    ["npm run build && rm -rf ~", ""],
  ])("suggests %s → %j for always", (command, pattern) => {
    expect(judgeCommand(command, policy("ask")).pattern).toBe(pattern);
  });

  it("suggests a pattern that allows the command it was suggested for, and nothing that does more", () => {
    for (const command of ["npm run build", "rm build", "CI=1 npm test", "make", "npm test > test.log"]) {
      const { pattern } = judgeCommand(command, policy("ask"));
      expect(judgeCommand(command, policy("allowlist", [pattern])).decision).toBe("run");
    }
    const rm = judgeCommand("rm build", policy("ask")).pattern;
    for (const more of [
      "rm -rf build",
      "rm -r build",
      "rm -f build",
      "rm build ~/notes",
      "rm ~/notes",
      "rm build > ~/.bashrc",
      "xargs rm build",
      "A=1 rm build",
    ])
      expect(judgeCommand(more, policy("allowlist", [rm])).decision, more).toBe("deny");
    // Harmless wrappers and redirections a pattern need not name still run.
    for (const same of ["timeout 5 rm build", "/bin/rm build", "rm build 2>/dev/null", "rm build 2>&1"])
      expect(judgeCommand(same, policy("allowlist", [rm])).decision, same).toBe("run");
  });

  it("a pattern without a redirection does not allow a command that writes a file; a rest pattern does", () => {
    expect(judgeCommand("npm test > out.log", policy("allowlist", ["npm test"])).decision).toBe("deny");
    expect(judgeCommand("npm test > out.log", policy("allowlist", ["npm test *"])).decision).toBe("run");
    expect(judgeCommand("find . | xargs rm", policy("allowlist", ["rm"])).decision).toBe("deny");
    expect(judgeCommand("find . | xargs rm", policy("allowlist", ["rm *"])).decision).toBe("run");
  });
});

describe("matchesPattern", () => {
  it.each([
    [["npm", "test"], "npm test", true],
    [["npm", "test", "--watch"], "npm test", false],
    [["npm", "test", "--watch"], "npm test *", true],
    [["npm", "test"], "npm test *", true],
    [["npm", "run", "build"], "npm run *", true],
    [["npm", "run"], "npm run *", true],
    [["npm", "install"], "npm run *", false],
    [["npm", "run", "build"], "npm * build", true],
    [["npm", "run", "lint"], "npm * build", false],
    [["npm", "run", "test:unit"], "npm run test:*", true],
    [["npm", "run", "testx"], "npm run test:*", false],
    [["git", "log"], "git *", true],
    [["gitx", "log"], "git *", false],
    [["anything", "at", "all"], "*", true],
    [["npm", "test"], "  npm   test  ", true],
    [["a.b"], "a?b", false],
    [["npm", "test"], "", false],
    [[], "*", false],
  ])("%j against %j is %s", (words, pattern, expected) => {
    expect(matchesPattern(words, pattern)).toBe(expected);
  });
});

describe("secret files named by a command", () => {
  const home = "/home/op/.tenax";
  const place = commandPlace("/work/project", { home, dir: home }, { HOME: "/home/op" });
  const judged = (command: string, mode: ExecMode = "ask", allow: string[] = []) =>
    judgeCommand(command, { mode, allow, place });

  it.each([
    "cat /etc/shadow",
    "cat /home/op/.tenax/.env",
    "head -1 ~/.ssh/id_ed25519",
    "grep KEY /home/op/.tenax/config.yaml",
    "cat < /etc/gshadow",
  ])("%s asks even though it only reads", (command) => {
    const judgement = judged(command);
    expect(judgement.decision).toBe("ask");
    expect(judgement.dangers.map((d) => d.rule)).toContain("secret-file");
  });

  it("an allow pattern does not open a secret, allowlist asks, full runs it", () => {
    expect(judged("cat /etc/shadow", "ask", ["cat *"]).decision).toBe("ask");
    expect(judged("cat /etc/shadow", "allowlist", ["cat *"]).decision).toBe("ask");
    expect(judged("cat /etc/shadow", "full").decision).toBe("run");
  });

  it.each([
    "cat .env",
    "cat ./config.yaml",
    "cat ~/.ssh.txt",
    "ls ~/.sshx",
    "echo $HOME/.ssh/id_rsa",
    "cat id_rsa.pub",
  ])("%s is no secret (a project's own .env, look-alikes, an expansion)", (command) => {
    expect(judged(command).dangers.map((d) => d.rule)).not.toContain("secret-file");
  });
});
