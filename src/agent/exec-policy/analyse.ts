// Reads a command line with a real shell parser into the simple commands it may run: those of
// pipelines, lists, subshells, groups, functions, $(...) and backticks, process substitutions,
// and the scripts of sh -c, eval and here-documents fed to a shell. Also finds the dangers that
// only the shape shows: a fork bomb, a download piped into a shell.
import {
  type Command,
  type Function as FunctionNode,
  forEachChild,
  type Pipeline,
  parse,
  type SyntaxNode,
  type Word,
} from "unbash";
import type { Danger, SimpleCommand } from "./types.js";
import { baseName, type CommandWord, SHELLS, unwrap } from "./wrappers.js";

export interface Analysis {
  commands: SimpleCommand[];
  dangers: Danger[];
  /** False when the parser found an error anywhere, or the nesting went too deep to follow. */
  parsed: boolean;
  /**
   * The variables the command line sets, each time with the word it is given, or null where the
   * value comes only when it runs (`read X`, `for X;`, an array): what `$X` may be (scope.ts).
   */
  bindings: Binding[];
}

export interface Binding {
  name: string;
  value: Word | null;
}

/** Programs that set the variables they are given as arguments (after their options). */
const SETTERS = new Set(["read", "mapfile", "readarray", "getopts", "let", "unset"]);

/** Scripts inside scripts (bash -c "eval '...'") deeper than this are not followed. */
const MAX_DEPTH = 8;

const NETWORK = new Set(["curl", "wget", "nc", "ncat", "netcat", "fetch", "aria2c", "socat"]);
const INTERPRETERS = /^(python[0-9.]*|perl|ruby|node|nodejs|php|lua|deno|bun|Rscript|tclsh)$/;

interface Context {
  source: string;
  wrappers: readonly string[];
  /** Assignments of the command whose script this is: `LD_PRELOAD=x sh -c 'ls'` gives them to ls. */
  assignments: readonly string[];
  /** The words of the wrappers around the shell whose script this is (`env -C DIR sh -c ...`). */
  outer: readonly CommandWord[];
  depth: number;
}

const EXPANSIONS = new Set([
  "SimpleExpansion",
  "ParameterExpansion",
  "CommandExpansion",
  "ArithmeticExpansion",
  "ProcessSubstitution",
]);

function known(node: { parts?: readonly { type: string; parts?: unknown }[] | undefined }): boolean {
  return (node.parts ?? []).every((part) => !EXPANSIONS.has(part.type) && known(part as typeof node));
}

/** A program word that globs or brace-expands is known only when it runs (`r?`, `/bin/r*`). */
const PATTERNS = new Set(["Glob", "ExtendedGlob", "BraceExpansion"]);

function commandWord(word: Word, program = false): CommandWord {
  const patterned = program && (word.parts ?? []).some((part) => PATTERNS.has(part.type));
  return { value: word.value, known: known(word) && !patterned, node: word };
}

/** `{rm,-rf,/}` is the words rm -rf /: a program word that is one brace list splits into its words. */
function programWords(word: Word): CommandWord[] {
  const [part, ...others] = word.parts ?? [];
  if (part?.type !== "BraceExpansion" || others.length > 0 || !/^\{[^{}$`]*,[^{}$`]*\}$/.test(word.text))
    return [commandWord(word, true)];
  return word.text
    .slice(1, -1)
    .split(",")
    .map((value) => ({ value, known: true }));
}

/** Whether a program reads the program it runs from its input: `sh`, `bash -s`, `python -`. */
function readsProgram(words: readonly string[]): boolean {
  const program = baseName(words[0] ?? "");
  const args = words.slice(1);
  if (SHELLS.has(program))
    return args.every((a) => a.startsWith("-") && !/^-[A-Za-z]*c/.test(a)) || args.includes("-s");
  if (!INTERPRETERS.test(program)) return false;
  return args.every((a) => a === "-" || (a.startsWith("-") && !/^-(c|e|m|E|p|r)$|^--(eval|print)/.test(a)));
}

function programs(found: Analysis): string[] {
  return found.commands.map((c) => baseName(c.words[0] ?? ""));
}

function empty(): Analysis {
  return { commands: [], dangers: [], parsed: true, bindings: [] };
}

function merge(into: Analysis, from: Analysis): void {
  into.commands.push(...from.commands);
  into.dangers.push(...from.dangers);
  into.bindings.push(...from.bindings);
  if (!from.parsed) into.parsed = false;
}

function collectScript(
  source: string,
  outer: { wrappers: readonly string[]; assignments: readonly string[]; outer?: readonly CommandWord[] },
  depth: number,
  found: Analysis,
): void {
  if (depth > MAX_DEPTH) {
    found.parsed = false;
    return;
  }
  const ctx = {
    source,
    wrappers: outer.wrappers,
    assignments: outer.assignments,
    outer: outer.outer ?? [],
    depth,
  };
  visit(parse(source), ctx, found);
}

/** What a simple command sets: its assignments, `export A=1`, `read A`, `printf -v A`. */
function bindingsOf(node: Command, words: readonly CommandWord[]): Binding[] {
  const found: Binding[] = [];
  const assigned = [...node.prefix, ...node.args].filter((p) => p.type === "Assignment");
  for (const a of assigned) found.push({ name: a.name, value: a.value.type === "Word" ? a.value : null });
  const program = words[0]?.known ? baseName(words[0].value) : "";
  const names = words.slice(1).filter((w) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(w.value));
  if (SETTERS.has(program)) for (const w of names) found.push({ name: w.value, value: null });
  if (program === "printf") {
    const at = words.findIndex((w) => w.value === "-v");
    const name = words[at + 1];
    if (at > 0 && name !== undefined) found.push({ name: name.value, value: null });
  }
  return found;
}

/** The substitutions inside a command's words and redirections: what `sh "$(curl ...)"` would run. */
function substitutions(node: Command, ctx: Context): Analysis {
  const found = empty();
  const scan = (child: SyntaxNode): void => {
    if (child.type === "CommandExpansion" || child.type === "ProcessSubstitution") {
      if (child.script) visit(child.script, ctx, found);
      return;
    }
    forEachChild(child, scan);
  };
  forEachChild(node, scan);
  return found;
}

function visitCommand(node: Command, ctx: Context, found: Analysis): void {
  const text = ctx.source.slice(node.pos, node.end);
  const words = [
    ...(node.name === undefined ? [] : programWords(node.name)),
    ...node.args.map((arg) => (arg.type === "Word" ? commandWord(arg) : { value: arg.text, known: false })),
  ];
  const assignments = [
    ...ctx.assignments,
    ...node.prefix.flatMap((p) => (p.type === "Assignment" ? [p.text] : [])),
  ];
  const redirects = node.redirects.map((r) => ({
    operator: r.operator,
    target: r.type === "HereDoc" ? "" : (r.target?.value ?? ""),
    ...(r.descriptor === undefined
      ? {}
      : {
          descriptor:
            r.descriptor.type === "FileDescriptor" ? String(r.descriptor.value) : `{${r.descriptor.name}}`,
        }),
    node: r.type === "HereDoc" ? undefined : r.target,
  }));
  found.bindings.push(...bindingsOf(node, words));
  for (const item of unwrap(words, ctx.wrappers)) {
    if (item.kind === "script") {
      collectScript(
        item.script,
        {
          wrappers: item.wrappers,
          assignments: [...assignments, ...item.assignments],
          outer: [...ctx.outer, ...item.outer],
        },
        ctx.depth + 1,
        found,
      );
      continue;
    }
    const simple: SimpleCommand = {
      text,
      assignments: [...assignments, ...item.assignments],
      words: item.words.map((w) => w.value),
      known: item.words.map((w) => w.known),
      nodes: item.words.map((w) => w.node),
      outer: [...ctx.outer, ...item.outer],
      wrappers: item.wrappers,
      redirects,
      moreArgs: item.moreArgs,
    };
    found.commands.push(simple);
    const program = baseName(simple.words[0] ?? "");
    if (SHELLS.has(program) || INTERPRETERS.test(program) || ["eval", "source", "."].includes(program)) {
      if (programs(substitutions(node, ctx)).some((p) => NETWORK.has(p)))
        found.dangers.push({ rule: "network-to-shell", text, why: "runs what it downloads as a program" });
    }
    if (SHELLS.has(program) && readsProgram(simple.words)) {
      for (const r of node.redirects) {
        const body =
          r.type === "HereDoc" ? r.body.text : r.type === "HereString" ? r.target?.value : undefined;
        const outer = {
          wrappers: [...item.wrappers, program],
          assignments: simple.assignments,
          outer: simple.outer,
        };
        if (body !== undefined) collectScript(body, outer, ctx.depth + 1, found);
      }
    }
  }
}

function visitPipeline(node: Pipeline, ctx: Context, found: Analysis): void {
  const parts = node.commands.map((command) => {
    const part = empty();
    visit(command, ctx, part);
    return part;
  });
  parts.forEach((part, i) => {
    merge(found, part);
    const before = parts[i - 1]?.commands;
    const printed = before?.length === 1 ? before[0] : undefined;
    if (
      printed !== undefined &&
      ["echo", "printf"].includes(printed.words[0] ?? "") &&
      printed.known.every(Boolean)
    )
      for (const command of part.commands)
        if (readsProgram(command.words))
          collectScript(
            printed.words.slice(1).join(" "),
            { wrappers: [...command.wrappers, command.words[0] ?? ""], assignments: command.assignments },
            ctx.depth + 1,
            found,
          );
    if (i === 0 || !parts.slice(0, i).some((before) => programs(before).some((p) => NETWORK.has(p)))) return;
    for (const command of part.commands)
      if (readsProgram(command.words))
        found.dangers.push({
          rule: "network-to-shell",
          text: ctx.source.slice(node.pos, node.end),
          why: "pipes a download into a shell or interpreter",
        });
  });
}

/** A function that calls itself in a pipe or in the background: each call makes two. */
function isForkBomb(node: FunctionNode): boolean {
  const name = node.name.value;
  const calls = (child: SyntaxNode, spawning: boolean): boolean => {
    if (child.type === "Command" && child.name?.value === name && spawning) return true;
    const next =
      spawning || (child.type === "Statement" && child.background === true) || child.type === "Pipeline";
    let hit = false;
    forEachChild(child, (grandchild) => {
      hit ||= calls(grandchild, next);
    });
    return hit;
  };
  return calls(node.body, false);
}

function visit(node: SyntaxNode, given: Context, found: Analysis): void {
  let ctx = given;
  if (node.type === "Script") {
    if ((node as { errors?: readonly unknown[] }).errors?.length) found.parsed = false;
    if (node.source !== undefined) ctx = { ...ctx, source: node.source };
  }
  if (node.type === "Pipeline") {
    visitPipeline(node, ctx, found);
    return;
  }
  if (node.type === "Command") visitCommand(node, ctx, found);
  // A loop's variable takes each word of its list in turn; with no list, the script's arguments.
  if (node.type === "For" || node.type === "Select")
    for (const value of node.wordlist ?? [null]) found.bindings.push({ name: node.name.value, value });
  if (node.type === "Function" && isForkBomb(node))
    found.dangers.push({
      rule: "fork-bomb",
      text: ctx.source.slice(node.pos, node.end),
      why: "a function that calls itself in a pipe or the background multiplies until the machine stalls",
    });
  forEachChild(node, (child) => visit(child, ctx, found));
}

/** The simple commands a command line may run, and the dangers its shape shows. */
export function analyse(command: string): Analysis {
  const found = empty();
  collectScript(command, { wrappers: [], assignments: [], outer: [] }, 0, found);
  return found;
}
