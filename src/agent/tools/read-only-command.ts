// Whether a shell command obviously changes no file, so terminal may skip the checkpoint before it.
// Deliberately conservative: a short allowlist of reading commands, joined by pipes and && || ;
// anything else (a redirection, a substitution, a background job, an unknown command, a risky
// option) counts as changing. A wrong "changing" costs one snapshot; a wrong "read-only" loses work.

/** Commands that read and print, whatever their arguments (beyond the options vetted below). */
const READERS = new Set([
  "ls",
  "cat",
  "head",
  "tail",
  "wc",
  "pwd",
  "echo",
  "printf",
  "grep",
  "egrep",
  "fgrep",
  "stat",
  "du",
  "df",
  "which",
  "whoami",
  "uname",
  "diff",
  "cmp",
  "cut",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "true",
  "false",
  "nl",
  "id",
]);

const GIT_READERS = new Set(["status", "diff", "log", "show", "ls-files", "rev-parse", "blame"]);

/** `find` options that delete, run or write. */
const FIND_WRITERS = /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/;

/** Anything that redirects, substitutes or runs in the background. */
const SHELL_WRITERS = /[>`]|\$\(|<\(|(^|[^&])&($|[^&])/;

/** Words of one simple command; quotes are kept together. Null when quoting is unbalanced. */
function words(segment: string): string[] | null {
  const pattern = /"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"']+/g;
  if (/["']/.test(segment.replace(pattern, ""))) return null;
  return [...segment.matchAll(pattern)].map((match) => match[0].replace(/^["']|["']$/g, ""));
}

function segmentReadOnly(segment: string): boolean {
  const argv = words(segment.trim());
  if (argv === null) return false;
  const [command, ...args] = argv;
  if (command === undefined) return true;
  if (command === "git") {
    const [sub, ...rest] = args;
    return sub !== undefined && GIT_READERS.has(sub) && !rest.some((arg) => arg.startsWith("--output"));
  }
  if (command === "find") return !args.some((arg) => FIND_WRITERS.test(arg));
  return READERS.has(command);
}

export function isReadOnlyCommand(command: string): boolean {
  if (SHELL_WRITERS.test(command)) return false;
  return command.split(/&&|\|\||[|;\n]/).every(segmentReadOnly);
}
