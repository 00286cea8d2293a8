// What a word of a command line stands for when it runs, as far as the line and the command's
// environment tell: quotes removed, `~` and `$NAME`/`${NAME}` replaced by what they may hold,
// `{a,b}` spread, and a pattern (`*.ts`) kept as a pattern for the caller to match. A word the
// line cannot tell (`$(cmd)`, `$PPID`, `${X:-y}`, `~user`, a variable set by `read`) is unknown:
// null, never a guess.
import type { Word, WordPart } from "unbash";

/** One way a word may turn out: plain text, or a shell pattern whose quoted characters are escaped. */
export interface Candidate {
  text: string;
  /** Whether `text` is a pattern (`\` escapes a character that stands for itself). */
  glob: boolean;
}

export interface WordScope {
  /** What `$NAME` may hold (each value as a shell would see it), or null when it cannot be known. */
  variable(name: string): readonly string[] | null;
  /** The home folder `~` stands for. */
  home: string | null;
}

/** A word with more ways than this to turn out is unknown (a guard against `{a,b}{c,d}...`). */
export const MAX_CANDIDATES = 64;

const GLOB_CHARS = /[*?[\]\\]/g;
export const escapeGlob = (text: string) => text.replace(GLOB_CHARS, "\\$&");

/** The parts of a word, in order, or null when one of them is known only when it runs. */
type Piece = Candidate[];

function literal(text: string): Piece {
  return [{ text: escapeGlob(text), glob: false }];
}

/**
 * A variable's values. Quoted, each is text; unquoted, the shell would also split it on blanks
 * and expand its patterns, so a value with either is unknown.
 */
function variable(name: string, quoted: boolean, scope: WordScope): Piece | null {
  const values = scope.variable(name);
  if (values === null) return null;
  if (!quoted && values.some((v) => /[\s*?[]/.test(v))) return null;
  return values.map((v) => ({ text: escapeGlob(v), glob: false }));
}

/** `{a,b,c}`: its words, or null for a range (`{1..9}`), a nested or quoted list. */
function braceWords(text: string): string[] | null {
  if (!/^\{[^{}$`'"\\]*,[^{}$`'"\\]*\}$/.test(text)) return null;
  return text.slice(1, -1).split(",");
}

function piece(part: WordPart, quoted: boolean, first: boolean, scope: WordScope): Piece | null {
  switch (part.type) {
    case "Literal":
      return first && !quoted ? tilde(part.value, scope) : literal(part.value);
    case "SingleQuoted":
    case "AnsiCQuoted":
      return literal(part.value);
    case "DoubleQuoted":
    case "LocaleString":
      return joined(part.parts, true, scope);
    case "Glob":
      return quoted ? literal(part.text) : [{ text: part.text, glob: true }];
    case "SimpleExpansion":
      return variable(part.text.slice(1), quoted, scope);
    case "ParameterExpansion":
      if (part.prefix !== undefined || part.index !== undefined || part.operation !== undefined) return null;
      return variable(part.parameter, quoted, scope);
    case "BraceExpansion": {
      const words = quoted ? null : braceWords(part.text);
      if (words === null) return null;
      return words.map((w) => ({ text: w, glob: /[*?[]/.test(w) }));
    }
    case "CommandExpansion":
    case "ArithmeticExpansion":
    case "ProcessSubstitution":
    case "ExtendedGlob":
      return null;
    default: {
      const never: never = part;
      return never;
    }
  }
}

/** `~` and `~/...` at a word's start are the home folder; `~user` and `~-` are unknown. */
function tilde(text: string, scope: WordScope): Piece | null {
  if (!text.startsWith("~")) return literal(text);
  const slash = text.indexOf("/");
  const head = slash < 0 ? text : text.slice(0, slash);
  if (head !== "~" || scope.home === null) return null;
  return literal(scope.home + (slash < 0 ? "" : text.slice(slash)));
}

/** Every way the parts may turn out, one after the other (at most MAX_CANDIDATES). */
function joined(parts: readonly WordPart[], quoted: boolean, scope: WordScope): Piece | null {
  let ways: Candidate[] = [{ text: "", glob: false }];
  for (const [i, part] of parts.entries()) {
    const next = piece(part, quoted, i === 0, scope);
    if (next === null) return null;
    const product: Candidate[] = [];
    for (const a of ways)
      for (const b of next) product.push({ text: a.text + b.text, glob: a.glob || b.glob });
    if (product.length > MAX_CANDIDATES) return null;
    ways = product;
  }
  return ways;
}

/**
 * What a word may be when it runs, or null when it cannot be known. `value` stands alone when
 * there is no parser's word (a word Tenax made up: find's `.`, a split brace list).
 */
export function resolveWord(
  word: { value: string; known: boolean; node?: Word | undefined },
  scope: WordScope,
): Candidate[] | null {
  const node = word.node;
  if (node?.parts !== undefined) return joined(node.parts, false, scope);
  // A word with no parts is one plain literal: only a leading `~` means anything.
  if (node !== undefined) return tilde(node.value, scope);
  return word.known ? tilde(word.value, scope) : null;
}

/** The text a candidate names, its escapes removed (for one that is no pattern). */
export function unescapeGlob(text: string): string {
  return text.replace(/\\(.)/g, "$1");
}
