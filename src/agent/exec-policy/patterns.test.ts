// The "always" pattern, as properties over generated commands: a dangerous command is offered
// none, a pattern allows the command it was offered for, and whatever else it allows does no more
// than that command (no flag, target or written file it did not have, no arguments that arrive
// only when it runs, no danger).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { analyse } from "./analyse.js";
import { commandDangers } from "./dangers.js";
import { judgeCommand } from "./judge.js";
import { allows, patternWords } from "./patterns.js";
import { isReadOnlySimple } from "./read-only.js";
import type { SimpleCommand } from "./types.js";

const PROGRAMS = [
  "rm",
  "mv",
  "cp",
  "chmod",
  "chown",
  "git",
  "npm",
  "find",
  "dd",
  "tee",
  "sed",
  "make",
  "touch",
];
const OPTIONS = ["-r", "-f", "-rf", "-R", "-i", "-n", "-v", "--force", "--recursive", "--no-preserve-root"];
const OPERANDS = [
  "build",
  "out.txt",
  "~",
  "~/notes",
  "/",
  "/etc/hosts",
  ".",
  "..",
  "*",
  "*.o",
  "src/a.ts",
].concat(["'a b'", "$HOME", "$X/y", "push", "run", "test", "origin", "main", "of=/dev/sda", "-delete"]);
const REDIRECTS = ["> out.log", ">> ~/.bashrc", "2>&1", "> /dev/null", "< in.txt", "2> err.log"];
const WRAPPERS = ["", "sudo ", "timeout 5 ", "env A=1 ", "nice ", "xargs ", "A=1 ", "bash -c "];

interface Parts {
  wrapper: string;
  program: string;
  args: string[];
  redirects: string[];
}

function line(parts: Parts): string {
  const command = [parts.program, ...parts.args, ...parts.redirects].join(" ");
  return parts.wrapper === "bash -c "
    ? `bash -c '${command.replaceAll("'", "'\\''")}'`
    : parts.wrapper + command;
}

const partsArb: fc.Arbitrary<Parts> = fc.record({
  wrapper: fc.constantFrom(...WRAPPERS),
  program: fc.constantFrom(...PROGRAMS),
  args: fc.array(fc.constantFrom(...OPTIONS, ...OPERANDS), { maxLength: 4 }),
  redirects: fc.array(fc.constantFrom(...REDIRECTS), { maxLength: 2 }),
});

/** A command like `parts`, or the same with something added or swapped: a flag, a target, a redirection, a wrapper. */
function variant(parts: Parts): fc.Arbitrary<Parts> {
  return fc.oneof(
    fc.constant(parts),
    fc
      .constantFrom(...OPTIONS, ...OPERANDS)
      .chain((word) =>
        fc.nat(parts.args.length).map((at) => ({ ...parts, args: parts.args.toSpliced(at, 0, word) })),
      ),
    fc
      .constantFrom(...OPTIONS, ...OPERANDS)
      .chain((word) =>
        fc
          .nat(Math.max(0, parts.args.length - 1))
          .map((at) => ({ ...parts, args: parts.args.toSpliced(at, 1, word) })),
      ),
    fc.constantFrom(...REDIRECTS).map((r) => ({ ...parts, redirects: [...parts.redirects, r] })),
    fc.constantFrom(...WRAPPERS).map((wrapper) => ({ ...parts, wrapper })),
  );
}

const isOption = (word: string) => word.startsWith("-") && word !== "-";

/** Whether `allowed` does no more than `approved`: same program, its flags, targets and files only. */
function noMoreThan(allowed: SimpleCommand, approved: SimpleCommand): string | null {
  if (commandDangers(allowed).length > 0) return "it is dangerous";
  if (allowed.moreArgs && !approved.moreArgs) return "it takes arguments only when it runs";
  const [program, ...args] = patternWords(allowed);
  const [approvedProgram, ...approvedArgs] = patternWords(approved);
  if (program !== approvedProgram) return `it runs ${program}, not ${approvedProgram}`;
  const extra = args.filter((word) => !approvedArgs.includes(word));
  if (extra.some(isOption)) return `it adds the flag(s) ${extra.filter(isOption).join(" ")}`;
  if (extra.length > 0) return `it adds ${extra.join(" ")}`;
  return null;
}

describe("the pattern an always approval keeps", () => {
  it("is none for a dangerous command", () => {
    fc.assert(
      fc.property(partsArb, (parts) => {
        const judged = judgeCommand(line(parts), { mode: "ask", allow: [] });
        if (judged.dangers.length > 0) expect(judged.pattern, line(parts)).toBe("");
      }),
      { numRuns: 3000 },
    );
  });

  it("allows the command it was offered for", () => {
    fc.assert(
      fc.property(partsArb, (parts) => {
        const command = line(parts);
        const { pattern } = judgeCommand(command, { mode: "ask", allow: [] });
        if (pattern === "") return;
        expect(judgeCommand(command, { mode: "allowlist", allow: [pattern] }).decision, command).toBe("run");
      }),
      { numRuns: 3000 },
    );
  });

  it("allows nothing that does more than that command: no other flag, target or file, no danger", () => {
    fc.assert(
      fc.property(
        partsArb.chain((approved) => fc.tuple(fc.constant(approved), variant(approved))),
        ([approvedParts, otherParts]) => {
          const approved = line(approvedParts);
          const judged = judgeCommand(approved, { mode: "ask", allow: [] });
          if (judged.pattern === "") return;
          // The simple command the pattern was offered for: the first that would have asked.
          const source = analyse(approved).commands.find((c) => !isReadOnlySimple(c));
          if (source === undefined) return;
          // What the policy lets run without asking, given only that pattern: each part of it is
          // read-only, or allowed by the pattern and no more than the approved command.
          const other = line(otherParts);
          if (judgeCommand(other, { mode: "allowlist", allow: [judged.pattern] }).decision !== "run") return;
          for (const command of analyse(other).commands) {
            if (isReadOnlySimple(command)) continue;
            expect(allows(command, [judged.pattern]), other).toBe(true);
            const why = noMoreThan(command, source);
            expect(why, `"${judged.pattern}" (for ${approved}) lets ${other} run: ${why}`).toBeNull();
          }
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("for rm -rf ~ is none, so always is not offered (it used to be rm *)", () => {
    const judged = judgeCommand("rm -rf ~", { mode: "ask", allow: [] });
    expect(judged.decision).toBe("ask");
    expect(judged.pattern).toBe("");
  });
});
