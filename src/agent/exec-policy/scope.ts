// What a command line's variables and working folder may be when it runs: its environment, and
// everything the line itself sets (assignments, `export`, loops, `read`) or changes (`cd`,
// `pushd`, `env -C DIR`, `git -C DIR`). Order and subshells are not followed: every value the
// line gives a variable, and every folder it may change to, counts everywhere in it, so what a
// word may name is never narrower than what runs. What it cannot tell is unknown (null).
import { isAbsolute, posix } from "node:path";
import type { Analysis, Binding } from "./analyse.js";
import { type Candidate, MAX_CANDIDATES, resolveWord, unescapeGlob, type WordScope } from "./resolve.js";
import type { CommandPlace } from "./types.js";
import { baseName, type CommandWord } from "./wrappers.js";

export interface CommandScope extends WordScope {
  /** Every folder the line's commands may run in, or null when one is known only when it runs. */
  cwds: readonly string[] | null;
}

/** Special parameters ($1, $$, $?, $!, ...) and those the shell sets itself: known only when it runs. */
const SHELL_SET =
  /^([0-9]+|[@*#?$!_-]|PPID|RANDOM|SRANDOM|SECONDS|LINENO|BASHPID|OLDPWD|REPLY|OPTARG|OPTIND|BASH_.*|FUNCNAME|PIPESTATUS|EPOCH.*|HISTCMD|UID|EUID|GROUPS|HOSTNAME|SHLVL|IFS|CDPATH_RESULT)$/;

/** Options of any program whose value is a folder it works in (`-C DIR`, `--chdir=DIR`). */
const CHDIR_OPTION = /^(-C|--chdir|--directory|--cwd|--work-tree|--git-dir)$/;
const CHDIR_INLINE = /^(--chdir|--directory|--cwd|--work-tree|--git-dir)=/;

/** Programs the shell reads a script into, whose variables can then be anything. */
const OPAQUE = new Set(["source", ".", "eval"]);

/** More folders than this to look in, and a relative path is as good as unknown. */
const MAX_CWDS = 16;

/** Joins a relative path to a folder, folding `.` and `..`. */
export function joinPath(dir: string, path: string): string {
  return posix.normalize(isAbsolute(path) ? path : `${dir}/${path}`).replace(/(.)\/+$/, "$1");
}

class Scope implements CommandScope {
  cwds: string[] | null;
  readonly home: string | null;
  private readonly bound = new Map<string, (CommandWord | null)[]>();
  private readonly resolving = new Set<string>();

  constructor(
    found: Analysis,
    private readonly place: CommandPlace,
    private readonly opaque: boolean,
  ) {
    this.home = place.env.HOME ?? null;
    this.cwds = [place.cwd];
    for (const b of found.bindings) this.bind(b);
  }

  private bind(binding: Binding): void {
    const list = this.bound.get(binding.name) ?? [];
    list.push(
      binding.value === null ? null : { value: binding.value.value, known: true, node: binding.value },
    );
    this.bound.set(binding.name, list);
  }

  variable(name: string): readonly string[] | null {
    if (this.opaque || SHELL_SET.test(name)) return null;
    // The shell sets PWD to the folder it is in.
    if (name === "PWD") return this.cwds;
    const given = this.place.env[name];
    const set = this.bound.get(name);
    if (set === undefined) return given === undefined ? null : [given];
    // Before the line sets it, it is what the environment gave, or empty; then each value set.
    if (this.resolving.has(name)) return null;
    this.resolving.add(name);
    try {
      const values = new Set([given ?? ""]);
      for (const word of set) {
        const ways = word === null ? null : resolveWord(word, this);
        if (ways === null || ways.some((w) => w.glob)) return null;
        for (const way of ways) values.add(unescapeGlob(way.text));
        if (values.size > MAX_CANDIDATES) return null;
      }
      return [...values];
    } finally {
      this.resolving.delete(name);
    }
  }

  /** Adds the folders one `cd`-like word may lead to; false when it cannot be known. */
  addFolder(ways: Candidate[] | null): boolean {
    if (ways === null || this.cwds === null) return false;
    const next = new Set(this.cwds);
    for (const way of ways) {
      // A pattern (cd ~/.ten*) may lead anywhere it matches: unknown.
      if (way.glob) return false;
      const target = unescapeGlob(way.text);
      for (const dir of this.cwds) next.add(joinPath(dir, target));
      const cdpath = this.place.env.CDPATH;
      if (cdpath !== undefined && !isAbsolute(target))
        for (const base of cdpath.split(":")) if (base !== "") next.add(joinPath(base, target));
    }
    if (next.size > MAX_CWDS) return false;
    this.cwds = [...next];
    return true;
  }
}

/** The words of a command that change where it, or what follows it, works. */
function folderWords(words: readonly CommandWord[]): { dirs: CommandWord[]; unknown: boolean } {
  const program = words[0]?.known ? baseName(words[0].value) : "";
  const dirs: CommandWord[] = [];
  if (program === "cd" || program === "pushd") {
    const target = words.slice(1).find((w) => !/^-[LPe@]+$/.test(w.value));
    // A word Tenax makes up, with no parser's word behind it, has its `~` expanded.
    if (target === undefined) return { dirs: [{ value: "~", known: true }], unknown: false };
    // `cd -` goes back to OLDPWD; pushd +N to a folder of its stack.
    if (target.value === "-" || /^[+-][0-9]+$/.test(target.value)) return { dirs, unknown: true };
    dirs.push(target);
  }
  if (program === "popd") return { dirs, unknown: true };
  for (const [i, w] of words.entries()) {
    if (CHDIR_OPTION.test(w.value) && words[i + 1] !== undefined) dirs.push(words[i + 1] as CommandWord);
    const inline = CHDIR_INLINE.exec(w.value);
    if (inline) dirs.push({ ...w, value: w.value.slice(inline[0].length), node: undefined });
  }
  return { dirs, unknown: false };
}

/** The scope of a whole command line, analysed. */
export function commandScope(found: Analysis, place: CommandPlace): CommandScope {
  const opaque =
    !found.parsed ||
    found.commands.some((c) => OPAQUE.has(c.known[0] === true ? baseName(c.words[0] ?? "") : ""));
  const scope = new Scope(found, place, opaque);
  // A cd may lead on from where another led: go round until nothing is added (bounded).
  for (let round = 0; round < 3 && scope.cwds !== null; round++) {
    const before = scope.cwds.length;
    for (const command of found.commands) {
      const words = command.words.map((value, i) => ({
        value,
        known: command.known[i] === true,
        node: command.nodes[i],
      }));
      const { dirs, unknown } = folderWords([...words, ...command.outer]);
      const added = !unknown && dirs.every((dir) => scope.addFolder(resolveWord(dir, scope)));
      if (!added) scope.cwds = null;
      if (scope.cwds === null) break;
    }
    if (scope.cwds === null || scope.cwds.length === before) break;
  }
  return scope;
}
