// Command patterns of tools.exec.allow. A pattern is the words of one simple command, split on
// spaces: each word matches one word of the command exactly, `*` inside a word matches any
// characters of that word, a lone `*` matches any one word, and a lone `*` last matches any rest,
// none included ("npm test", "npm run *", "git log *"; "*" alone allows every command). Assignments
// before the program are words too ("CI=1 npm test"), and so is each redirection that reads or
// writes a file, as its operator and its target ("npm test > test.log"): a pattern without them
// does not allow a command that writes where the pattern never said. A command that gets more
// arguments only when it runs (xargs) is allowed only by a pattern ending in a lone `*`. A pattern
// never makes a dangerous command safe.
import { isQuietRedirect } from "./read-only.js";
import type { SimpleCommand } from "./types.js";

function wordMatches(word: string, pattern: string): boolean {
  if (!pattern.includes("*")) return word === pattern;
  const source = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${source.join(".*")}$`, "s").test(word);
}

function patternParts(pattern: string): string[] {
  return pattern
    .trim()
    .split(/\s+/)
    .filter((p) => p !== "");
}

/** Whether the words of a simple command (assignments first, then program and arguments) match. */
export function matchesPattern(simpleCommandWords: readonly string[], pattern: string): boolean {
  const parts = patternParts(pattern);
  if (parts.length === 0) return false;
  const rest = parts[parts.length - 1] === "*";
  const fixed = rest ? parts.slice(0, -1) : parts;
  if (simpleCommandWords.length === 0) return false;
  if (rest ? simpleCommandWords.length < fixed.length : simpleCommandWords.length !== fixed.length)
    return false;
  return fixed.every((part, i) => part === "*" || wordMatches(simpleCommandWords[i] ?? "", part));
}

/**
 * The words a pattern is matched against: assignments, program and arguments, then each
 * redirection that reads or writes a file as two words (`>` or `2>`, then `out.log`); copies of a descriptor
 * (2>&1) and output to /dev/null are left out.
 */
export function patternWords(command: SimpleCommand): string[] {
  const redirects = command.redirects
    .filter((r) => !isQuietRedirect(r))
    .flatMap((r) => [`${r.descriptor ?? ""}${r.operator}`, r.target]);
  return [...command.assignments, ...command.words, ...redirects];
}

/** Whether a pattern allows a simple command; a program known only when it runs never matches. */
export function allows(command: SimpleCommand, patterns: readonly string[]): boolean {
  if (command.words.length > 0 && command.known[0] !== true) return false;
  const words = patternWords(command);
  return patterns.some(
    (pattern) =>
      (!command.moreArgs || patternParts(pattern).at(-1) === "*") && matchesPattern(words, pattern),
  );
}

/**
 * The pattern an "always" (or "session") approval keeps: exactly the approved command, its
 * assignments, words and redirections, with no wildcard, so it never allows a command that does
 * more than the one approved (another flag such as -r or -f, another target, another file
 * written). "" when no pattern can say exactly that: a word known only when it runs, a word with a
 * space or a `*` in it (a pattern would read it as two words or as a wildcard), a here-document,
 * or arguments that arrive only when it runs (xargs). A dangerous command gets none at all (the
 * judge's business: it asks for every run whatever the patterns say).
 */
export function suggestPattern(command: SimpleCommand): string {
  if (command.words.length === 0 || !command.known.every(Boolean) || command.moreArgs) return "";
  const words = patternWords(command);
  if (words.some((word) => word === "" || /[\s*]/.test(word))) return "";
  return words.join(" ");
}
