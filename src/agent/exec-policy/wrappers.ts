// Looks through the programs that run another program (env, sudo, nice, timeout, xargs, find -exec,
// ...) and finds the script that a shell -c, eval or su -c runs, so the policy judges what really runs.
import type { Word } from "unbash";

/** A word of a simple command: its value with quotes removed, and whether it is known before it runs. */
export interface CommandWord {
  value: string;
  known: boolean;
  /** The word as the parser read it, when it was one word of the command line. */
  node?: Word | undefined;
}

export type Unwrapped =
  | {
      kind: "command";
      words: CommandWord[];
      assignments: string[];
      wrappers: string[];
      moreArgs: boolean;
      /** The wrappers' own words (options and their values: `xargs -a FILE`, `env -C DIR`). */
      outer: CommandWord[];
    }
  | { kind: "script"; script: string; assignments: string[]; wrappers: string[]; outer: CommandWord[] };

const SYSTEM_BIN = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$|^\/opt\/homebrew\/bin\/[^/]+$/;

export const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"]);

/** The name of a program: its last path segment. */
export function baseName(program: string): string {
  return program.slice(program.lastIndexOf("/") + 1);
}

/** A program named by a path in a system folder (/bin/rm, /usr/bin/env) is that program. */
function normaliseProgram(word: CommandWord): CommandWord {
  return SYSTEM_BIN.test(word.value) ? { ...word, value: baseName(word.value) } : word;
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** Options that take the next word as their value, per wrapper. */
const VALUE_OPTIONS: Record<string, readonly string[]> = {
  env: ["-u", "--unset", "-C", "--chdir"],
  sudo: [
    "-u",
    "--user",
    "-g",
    "--group",
    "-C",
    "--close-from",
    "-D",
    "--chdir",
    "-h",
    "--host",
    "-p",
    "--prompt",
  ].concat(["-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout"]),
  doas: ["-u", "-C"],
  nice: ["-n", "--adjustment"],
  ionice: ["-c", "--class", "-n", "--classdata", "-p", "--pid"],
  timeout: ["-s", "--signal", "-k", "--kill-after"],
  xargs: ["-I", "-n", "--max-args", "-P", "--max-procs", "-L", "--max-lines", "-s", "--max-chars"].concat([
    "-d",
    "--delimiter",
    "-E",
    "-a",
    "--arg-file",
  ]),
  stdbuf: ["-i", "--input", "-o", "--output", "-e", "--error"],
  exec: ["-a"],
  time: ["-f", "--format", "-o", "--output"],
  npx: ["-p", "--package"],
  command: [],
  builtin: [],
  nohup: [],
  setsid: [],
  busybox: [],
  unbuffer: [],
  chroot: ["--userspec", "--groups"],
  flock: ["-w", "--timeout", "-E", "--conflict-exit-code"],
  strace: ["-o", "-e", "-p", "-s", "-u", "-a", "-P", "-I", "-b"],
  ltrace: ["-o", "-e", "-p", "-s", "-u", "-a", "-n"],
};

/** Wrappers whose first word after the options is not the program: chroot's folder, flock's file. */
const SKIP_ONE = new Set(["timeout", "chroot", "flock"]);

/** The index of the first word after `from` that is not an option of this wrapper. */
function skipOptions(words: readonly CommandWord[], from: number, valueOptions: readonly string[]): number {
  let i = from;
  while (i < words.length) {
    const word = words[i]?.value ?? "";
    if (word === "--") return i + 1;
    if (!word.startsWith("-") || word === "-") return i;
    i += valueOptions.includes(word) ? 2 : 1;
  }
  return i;
}

/** The script of `sh -c SCRIPT`, null when the shell runs a file or reads its input. */
function shellScript(words: readonly CommandWord[]): CommandWord | null {
  let takesScript = false;
  for (let i = 1; i < words.length; i++) {
    const word = words[i]?.value ?? "";
    if (word === "--") return takesScript ? (words[i + 1] ?? null) : null;
    if (word === "-o" || word === "+o" || word === "--rcfile" || word === "--init-file") {
      i++;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(word)) {
      if (word.startsWith("-") && word.includes("c")) takesScript = true;
      continue;
    }
    if (word.startsWith("--")) continue;
    return takesScript ? (words[i] ?? null) : null;
  }
  return null;
}

function script(
  word: CommandWord | null | undefined,
  words: CommandWord[],
  wrappers: string[],
  outer: { assignments: string[]; moreArgs: boolean; outer: CommandWord[] },
): Unwrapped {
  if (word?.known)
    return {
      kind: "script",
      script: word.value,
      assignments: outer.assignments,
      wrappers,
      // The shell's own words (sh -c SCRIPT NAME ARGS...) stay with what its script runs.
      outer: [...outer.outer, ...words.slice(1).filter((w) => w !== word)],
    };
  return { kind: "command", words, wrappers, ...outer };
}

/** find's start paths (after -H, -L, -P, -D and -O options; "." when none) and where its expression begins. */
export function findStarts<T extends { value: string } | string>(
  args: readonly T[],
): { starts: T[]; end: number } {
  const text = (arg: T | undefined) => (typeof arg === "string" ? arg : (arg?.value ?? ""));
  let i = 0;
  while (/^-([HLP]|O\d*)$/.test(text(args[i])) || text(args[i]) === "-D") i += text(args[i]) === "-D" ? 2 : 1;
  const starts: T[] = [];
  while (i < args.length && !/^[-(!]/.test(text(args[i]))) starts.push(args[i++] as T);
  return { starts, end: i };
}

/** `find START... -exec CMD {} ;`: each command find runs, with {} standing for the start paths. */
function findCommands(words: readonly CommandWord[], wrappers: string[]): Unwrapped[] {
  const parsed = findStarts(words.slice(1));
  let i = parsed.end + 1;
  const starts = parsed.starts.length > 0 ? parsed.starts : [{ value: ".", known: true }];
  const found: Unwrapped[] = [];
  for (; i < words.length; i++) {
    if (!/^-(exec|execdir|ok|okdir)$/.test(words[i]?.value ?? "")) continue;
    const inner: CommandWord[] = [];
    for (i++; i < words.length && words[i]?.value !== ";" && words[i]?.value !== "+"; i++) {
      const word = words[i] as CommandWord;
      if (word.value === "{}") inner.push(...starts);
      else inner.push(word);
    }
    if (inner.length > 0) found.push(...unwrap(inner, [...wrappers, "find"]));
  }
  return found;
}

/**
 * What a simple command really runs: itself, the program behind its wrappers, or the script its
 * shell runs. `find -exec` yields find itself and each command it runs.
 */
export function unwrap(given: readonly CommandWord[], outer: readonly string[] = []): Unwrapped[] {
  let words = given.map((word, i) => (i === 0 ? normaliseProgram(word) : word));
  const wrappers = [...outer];
  const assignments: string[] = [];
  const consumed: CommandWord[] = [];
  let moreArgs = false;
  for (;;) {
    const first = words[0];
    const program = first?.known ? baseName(first.value) : "";
    const here = (): Unwrapped => ({
      kind: "command",
      words,
      assignments,
      wrappers,
      moreArgs,
      outer: consumed,
    });
    if (first === undefined || !first.known) return [here()];
    if (SHELLS.has(program))
      return [script(shellScript(words), words, [...wrappers], { assignments, moreArgs, outer: consumed })];
    if (program === "eval") {
      const rest = words.slice(1);
      const joined = { value: rest.map((w) => w.value).join(" "), known: rest.every((w) => w.known) };
      return [script(joined, words, [...wrappers], { assignments, moreArgs, outer: consumed })];
    }
    if (program === "su") {
      const at = words.findIndex((w) => w.value === "-c" || w.value === "--command");
      const inline = words.find((w) => w.value.startsWith("--command="));
      if (inline)
        return [
          script({ ...inline, value: inline.value.slice(10) }, words, [...wrappers, "su"], {
            assignments,
            moreArgs,
            outer: consumed,
          }),
        ];
      return at < 0
        ? [here()]
        : [script(words[at + 1], words, [...wrappers, "su"], { assignments, moreArgs, outer: consumed })];
    }
    if (program === "find") return [here(), ...findCommands(words, wrappers)];
    if (program === "command" && words.some((w) => w.value === "-v" || w.value === "-V")) return [here()];
    if (program === "env" || program === "flock") {
      // env -S 'rm -rf /' splits its string into words; flock -c runs its string in a shell.
      const flag = program === "env" ? ["-S", "--split-string"] : ["-c", "--command"];
      const at = words.findIndex((w) => flag.includes(w.value));
      if (at >= 0) {
        const rest = words.slice(at + 1);
        const joined = { value: rest.map((w) => w.value).join(" "), known: rest.every((w) => w.known) };
        return [script(joined, words, [...wrappers, program], { assignments, moreArgs, outer: consumed })];
      }
    }
    if (program === "watch") {
      // watch runs its words joined as a shell command.
      let at = 1;
      while (at < words.length && (words[at]?.value ?? "").startsWith("-"))
        at += ["-n", "--interval", "-d"].includes(words[at]?.value ?? "") ? 2 : 1;
      const rest = words.slice(at);
      if (rest.length === 0) return [here()];
      const joined = { value: rest.map((w) => w.value).join(" "), known: rest.every((w) => w.known) };
      return [script(joined, words, [...wrappers, program], { assignments, moreArgs, outer: consumed })];
    }
    const valueOptions = VALUE_OPTIONS[program];
    if (valueOptions === undefined) return [here()];
    let next = skipOptions(words, 1, valueOptions);
    if (SKIP_ONE.has(program)) next++;
    if (program === "env" || program === "sudo") {
      while (next < words.length && ASSIGNMENT.test(words[next]?.value ?? "")) {
        assignments.push(words[next]?.value ?? "");
        next++;
      }
    }
    if (next >= words.length) {
      if (program === "xargs")
        return [
          {
            kind: "command",
            words: [{ value: "echo", known: true }],
            assignments,
            wrappers: [...wrappers, program],
            moreArgs: true,
            outer: [...consumed, ...words.slice(1)],
          },
        ];
      return [here()];
    }
    wrappers.push(program);
    if (program === "xargs") moreArgs = true;
    consumed.push(...words.slice(1, next));
    words = words.slice(next).map((word, i) => (i === 0 ? normaliseProgram(word) : word));
  }
}
