import { describe, expect, it } from "vitest";
import { isReadOnlyCommand } from "./read-only-command.js";

describe("isReadOnlyCommand", () => {
  it.each([
    "ls -la",
    "pwd",
    "cat README.md",
    "echo hello world",
    "git status",
    "git diff --stat HEAD~1",
    "git log --oneline | head -5",
    "grep -rn 'TODO' src && wc -l src/a.ts",
    "find . -name '*.ts'",
    "cat a; ls b",
    'grep "a;b|c" notes.txt',
    "echo $(ls)",
    "bash -c 'git status'",
  ])("%s is read-only", (command) => {
    expect(isReadOnlyCommand(command)).toBe(true);
  });

  it.each([
    "echo hi > out.txt",
    "cat a >> b",
    "ls 2>&1",
    "rm -rf build",
    "mv a b",
    "touch x",
    "npm install",
    "git commit -m x",
    "git checkout main",
    "git diff --output=patch.diff",
    "git -C other status",
    "find . -name '*.tmp' -delete",
    "find . -exec rm {} ;",
    "ls && rm x",
    "ls | xargs rm",
    "echo $(rm x)",
    "echo `touch x`",
    "sleep 1 &",
    "FOO=1 ls",
    "cat 'unbalanced",
    "sed -i s/a/b/ file",
    "ls $(touch x)",
    "cat <(rm x)",
    "bash -c 'rm x'",
    "eval 'touch x'",
    "/tmp/evil/ls",
    "ls\nrm x",
    "(rm x)",
    "env A=1 ls",
  ])("%s may change files", (command) => {
    expect(isReadOnlyCommand(command)).toBe(false);
  });
});
