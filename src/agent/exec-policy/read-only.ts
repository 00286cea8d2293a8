// Which simple commands only read: a short list of reading programs with their writing options
// vetted. Deliberately conservative: a wrong "read-only" runs a command nobody approved.
import type { SimpleCommand } from "./types.js";

/** Programs that read and print, whatever their arguments (beyond the options vetted below). */
const READERS = new Set(
  ["ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "grep", "egrep", "fgrep", "stat", "du", "df"]
    .concat(["which", "whoami", "uname", "diff", "cmp", "cut", "basename", "dirname", "realpath", "readlink"])
    .concat(["true", "false", "nl", "id", "cd", "date", "hostname", "type", "test", "[", ":"]),
);

const GIT_READERS = new Set(["status", "diff", "log", "show", "ls-files", "rev-parse", "blame"]);

/** `find` options that delete, run or write. */
const FIND_WRITERS = /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/;

const INPUT = new Set(["<", "<<", "<<-", "<<<"]);

/**
 * How strictly redirections are read: "strict" takes only input (what the checkpoints need: any
 * output may change a file); "policy" also takes copies of a descriptor (2>&1) and /dev/null.
 */
export type RedirectRule = "strict" | "policy";

/** A copy of a descriptor (2>&1, <&-) or output thrown away (> /dev/null): no file is read or written. */
export function isQuietRedirect(redirect: { operator: string; target: string }): boolean {
  if ((redirect.operator === ">&" || redirect.operator === "<&") && /^(\d+|-)$/.test(redirect.target))
    return true;
  return [">", ">>", "&>", "&>>"].includes(redirect.operator) && redirect.target === "/dev/null";
}

function redirectReads(redirect: { operator: string; target: string }, rule: RedirectRule): boolean {
  if (INPUT.has(redirect.operator)) return true;
  return rule === "policy" && isQuietRedirect(redirect);
}

/** Whether a simple command only reads, given how its redirections are judged. */
export function isReadOnlySimple(command: SimpleCommand, rule: RedirectRule = "policy"): boolean {
  if (command.assignments.length > 0) return false;
  if (!command.redirects.every((r) => redirectReads(r, rule))) return false;
  const [program, ...args] = command.words;
  if (program === undefined || command.known[0] !== true) return false;
  if (program === "git") {
    const [sub, ...rest] = args;
    return sub !== undefined && GIT_READERS.has(sub) && !rest.some((arg) => arg.startsWith("--output"));
  }
  if (program === "find") return !args.some((arg) => FIND_WRITERS.test(arg));
  if (program === "command") return args[0] === "-v" || args[0] === "-V";
  // date -s and hostname NAME set the clock and the machine's name.
  if (program === "date") return !args.some((arg) => /^(-s|--set)/.test(arg) || /^-[a-zA-Z]*s/.test(arg));
  if (program === "hostname")
    return args.every((arg) => arg.startsWith("-") && !/^-(F|-file|b|-boot)/.test(arg));
  if (program === "env" || program === "printenv") return args.every((arg) => !arg.includes("="));
  return READERS.has(program);
}
