// Command patterns of tools.exec.allow. A pattern is the words of one simple command, split on
// spaces: each word matches one word of the command exactly, `*` inside a word matches any
// characters of that word, a lone `*` matches any one word, and a lone `*` last matches any rest,
// none included ("npm test", "npm run *", "git log *"; "*" alone allows every command). Assignments before the program are
// words too ("CI=1 npm test"). A pattern never makes a dangerous command safe.
import type { SimpleCommand } from "./types.js";

function wordMatches(word: string, pattern: string): boolean {
  if (!pattern.includes("*")) return word === pattern;
  const source = pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${source.join(".*")}$`, "s").test(word);
}

/** Whether the words of a simple command (assignments first, then program and arguments) match. */
export function matchesPattern(simpleCommandWords: readonly string[], pattern: string): boolean {
  const parts = pattern
    .trim()
    .split(/\s+/)
    .filter((p) => p !== "");
  if (parts.length === 0) return false;
  const rest = parts[parts.length - 1] === "*";
  const fixed = rest ? parts.slice(0, -1) : parts;
  if (simpleCommandWords.length === 0) return false;
  if (rest ? simpleCommandWords.length < fixed.length : simpleCommandWords.length !== fixed.length)
    return false;
  return fixed.every((part, i) => part === "*" || wordMatches(simpleCommandWords[i] ?? "", part));
}

/** Whether a pattern allows a simple command; a program known only when it runs never matches. */
export function allows(command: SimpleCommand, patterns: readonly string[]): boolean {
  if (command.words.length > 0 && command.known[0] !== true) return false;
  const words = [...command.assignments, ...command.words];
  return patterns.some((pattern) => matchesPattern(words, pattern));
}

/**
 * The pattern an "always" approval adds: the program and, when the next word is not an option,
 * that word too, then `*` ("npm run build" → "npm run *", "rm -rf build" → "rm *"). "" when the
 * program is known only when it runs.
 */
export function suggestPattern(command: SimpleCommand): string {
  const [program, next] = command.words;
  if (program === undefined || command.known[0] !== true) return "";
  const words = [...command.assignments, program];
  if (next !== undefined && command.known[1] === true && !next.startsWith("-") && !/\s/.test(next))
    words.push(next);
  return [...words, "*"].join(" ");
}
