// Which commands of a line may open a secret file: every word that may name a file (arguments,
// the wrappers' own words, redirection targets), resolved as the shell will (scope.ts: variables,
// `~`, `cd`, the working folder; patterns matched against the folders), and judged by where it
// lands. A word that cannot be resolved is a danger of its own: it may name anything. A program
// that reads a whole tree (`grep -r`, `diff -r`) may not be given a folder that holds a secret.
import type { Analysis } from "./analyse.js";
import { type Candidate, escapeGlob, resolveWord, unescapeGlob } from "./resolve.js";
import { type CommandScope, commandScope, joinPath } from "./scope.js";
import type { CommandPlace, Danger, SimpleCommand } from "./types.js";
import { baseName, type CommandWord } from "./wrappers.js";

/** Programs that open no file an argument names (their redirections are still looked at). */
const NO_FILES = new Set(
  ["echo", "printf", "true", "false", "pwd", "cd", "pushd", "popd", "dirs", "test", "[", ":", "type"]
    .concat(["which", "command", "basename", "dirname", "whoami", "id", "uname", "export", "unset"])
    .concat(["local", "readonly", "declare", "typeset", "set", "shift", "exit", "return", "wait", "sleep"])
    .concat(["seq", "expr", "let", "read"]),
);

/** A pattern matching more paths than this is as good as unknown. */
const MAX_MATCHES = 2_000;

/** Whether a program reads every file under a folder it is given (or under its working folder). */
function readsTree(program: string, args: readonly string[]): boolean {
  if (program === "rgrep") return true;
  if (["grep", "egrep", "fgrep"].includes(program))
    return args.some(
      (a, i) =>
        /^-[A-Za-z]*[rR]/.test(a) ||
        /^--(recursive|dereference-recursive|directories=recurse)$/.test(a) ||
        ((a === "-d" || a === "--directories") && args[i + 1] === "recurse"),
    );
  if (program === "diff") return args.some((a) => /^-[A-Za-z]*r/.test(a) || a === "--recursive");
  return false;
}

/** A shell pattern segment as a regular expression; `*` also matches a leading dot (dotglob). */
function segmentPattern(segment: string): RegExp {
  let source = "";
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i] as string;
    if (c === "\\" && i + 1 < segment.length) source += escapeRegExp(segment[++i] as string);
    else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else if (c === "[") {
      const close = segment.indexOf("]", i + 2);
      if (close < 0) source += "\\[";
      else {
        const body = segment
          .slice(i + 1, close)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\");
        source += `[${body}]`;
        i = close;
      }
    } else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, "s");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/** The paths an absolute pattern matches, as the shell expands it; null past MAX_MATCHES. */
function expand(pattern: string, place: CommandPlace): string[] | null {
  let paths = ["/"];
  for (const segment of pattern.split("/").filter((s) => s !== "")) {
    const next: string[] = [];
    if (!/(^|[^\\])[*?[]/.test(segment)) {
      for (const path of paths) next.push(joinPath(path, unescapeGlob(segment)));
    } else {
      const matcher = segmentPattern(segment);
      for (const path of paths) {
        const names = place.list(path);
        if (names === null) return null;
        for (const name of names)
          if (name !== "." && name !== ".." && matcher.test(name)) next.push(joinPath(path, name));
        if (next.length > MAX_MATCHES) return null;
      }
    }
    paths = next;
  }
  return paths;
}

/** Where a resolved word may land: absolute paths, or null when that cannot be known. */
function landings(way: Candidate, scope: CommandScope, place: CommandPlace): string[] | null {
  const text = way.text;
  const bases = text.startsWith("/") ? ["/"] : scope.cwds;
  if (bases === null) return null;
  const found: string[] = [];
  for (const base of bases) {
    const whole = joinPath(escapeGlob(base), text);
    // As written it already names the place (/proc/*/environ); else each path it matches.
    found.push(joinPath(base, unescapeGlob(text)));
    if (!way.glob) continue;
    const matches = expand(whole, place);
    if (matches === null) return null;
    found.push(...matches);
  }
  return found;
}

function quoted(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

/** The danger one simple command holds, if any: the first word that names a secret or is unknown. */
function commandDanger(command: SimpleCommand, scope: CommandScope, place: CommandPlace): Danger | null {
  const program = command.known[0] === true ? baseName(command.words[0] ?? "") : "";
  const opens = !NO_FILES.has(program);
  const unknown = (why: string): Danger => ({ rule: "unknown-path", text: command.text, why });
  if (opens && command.moreArgs)
    return unknown("its arguments arrive on its input when it runs, so they may name a secret file");
  // The wrappers' words count whatever the program is: `xargs -a FILE echo` reads FILE.
  const words: CommandWord[] = [...command.outer];
  if (opens)
    command.words.forEach((value, i) => {
      if (i > 0) words.push({ value, known: command.known[i] === true, node: command.nodes[i] });
    });
  for (const r of command.redirects)
    if (r.target !== "" && !(/^[<>]&$/.test(r.operator) && /^(\d+|-)$/.test(r.target)))
      words.push({ value: r.target, known: r.node === undefined, node: r.node });
  const tree = opens && readsTree(program, command.words.slice(1));
  const secret = (why: string): Danger => ({ rule: "secret-file", text: command.text, why });
  const under = (folder: string, what: string) =>
    secret(`it reads every file under ${folder}, which holds ${what}; only an approval may open it`);
  const check = (path: string): Danger | null => {
    const what = place.secretPath(path);
    if (what !== null) return secret(`it names ${what}, which only an approval may open`);
    const held = tree ? place.holdsSecrets(path) : null;
    return held === null ? null : under(path, held);
  };
  for (const word of words) {
    const ways = resolveWord(word, scope);
    if (ways === null)
      return unknown(`${quoted(word.value)} is known only when it runs, so it may name a secret file`);
    for (const way of ways) {
      const paths = landings(way, scope, place);
      if (paths === null)
        return unknown(
          `where ${quoted(word.value)} leads is known only when it runs, so it may be a secret file`,
        );
      for (const path of paths) {
        const danger = check(path);
        if (danger !== null) return danger;
      }
    }
  }
  // grep -r with no folder named reads the one it runs in.
  if (tree) {
    if (scope.cwds === null) return unknown("the folder it reads is known only when it runs");
    for (const cwd of scope.cwds) {
      const what = place.holdsSecrets(cwd);
      if (what !== null) return under(cwd, what);
    }
  }
  return null;
}

/** The secret-file dangers of a command line, one per simple command that has one. */
export function secretPathDangers(found: Analysis, place: CommandPlace): Danger[] {
  const scope = commandScope(found, place);
  const dangers: Danger[] = [];
  for (const command of found.commands) {
    const danger = commandDanger(command, scope, place);
    if (danger !== null) dangers.push(danger);
  }
  return dangers;
}
