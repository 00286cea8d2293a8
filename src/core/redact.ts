// Redaction by value: every secret Tenax knows (keys, tokens, values from `.env`) replaced by a
// marker naming it, `[redacted:NAME]`, in one precompiled pass, wherever text leaves the process
// or is stored. A stream redactor does the same for text that arrives in pieces. What tools print
// is also read for secrets spread out or cut up (redact-spread.ts).
import { SpreadMatcher, type SpreadStream } from "./redact-spread.js";

/** A secret and the name its marker shows: a config key path or a variable name. */
export interface NamedSecret {
  name: string;
  value: string;
}

/**
 * Shorter values are not redacted: replacing every "true" or "8642" would mangle ordinary text,
 * and a value that short is no real key.
 */
export const MIN_SECRET_LENGTH = 8;

/** Text shaped like a key, redacted from provider error messages even when its value is unknown. */
const KEY_SHAPES: readonly [RegExp, string][] = [
  [/\bsk-[A-Za-z0-9_*.-]{6,}/g, "sk-[redacted]"],
  // A token of MIN_SECRET_LENGTH or more: "Bearer KEY" in a line that tells how to send one stays.
  [/\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi, "Bearer [redacted]"],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, "[redacted]"],
  [/\b(api[_-]?key|x-api-key|access_token|token)(["']?\s*[:=]\s*["']?)[^\s"',&]+/gi, "$1$2[redacted]"],
];

/** The second net: anything shaped like a key is replaced, known or not. */
export function redactKeyShapes(text: string): string {
  return KEY_SHAPES.reduce((out, [pattern, replacement]) => out.replace(pattern, replacement), text);
}

const ELLIPSIS = "…";
/** The start of a secret this long at the end of a shortened message is replaced (shorter says nothing). */
const CUT_SECRET_MIN_CHARS = 4;

export const redactionMarker = (names: readonly string[]) => `[redacted:${names.join(", ")}]`;

interface TrieNode {
  next: Map<number, TrieNode>;
}

export class Redactor {
  /** Redacts nothing: for code that runs without a profile's secrets. */
  static readonly none = new Redactor([]);

  /** Each form a secret is matched in (as it is, and as it reads inside JSON text) → its name. */
  private readonly forms = new Map<string, string>();
  private readonly values = new Set<string>();
  private readonly pattern: RegExp | null;
  /** The same alternation, anchored where it is asked to look (overlaps). */
  private readonly sticky: RegExp | null;
  /** Every form, as a trie: which text ending could be the start of a secret (streams). */
  private readonly trie: TrieNode = { next: new Map() };
  /** The longest form, in UTF-16 units. */
  readonly maxLength: number;
  /** Every run of 8 characters of a secret, for what tools print (redactOutput). */
  private readonly spread: SpreadMatcher;

  constructor(secrets: readonly NamedSecret[]) {
    const kept = secrets.filter((s) => s.value.length >= MIN_SECRET_LENGTH);
    // The first name given for a value wins (config key paths come before variable names).
    for (const { name, value } of kept) {
      if (this.forms.has(value)) continue;
      this.forms.set(value, name);
      this.values.add(value);
    }
    // Inside JSON text (a log line, a stored tool call) a quote or backslash of a secret is
    // escaped, once or, for JSON in a JSON string, twice.
    for (const value of this.values) {
      const name = this.forms.get(value) as string;
      const once = JSON.stringify(value).slice(1, -1);
      const twice = JSON.stringify(once).slice(1, -1);
      for (const form of [once, twice]) if (!this.forms.has(form)) this.forms.set(form, name);
    }
    // Longest first: where two secrets start at the same place, the longer one is replaced whole.
    const ordered = [...this.forms.keys()].sort((a, b) => b.length - a.length);
    this.maxLength = ordered[0]?.length ?? 0;
    const source = ordered.map(escapeRegExp).join("|");
    this.pattern = ordered.length > 0 ? new RegExp(source, "g") : null;
    this.sticky = ordered.length > 0 ? new RegExp(source, "y") : null;
    for (const form of ordered) this.insert(form);
    this.spread = new SpreadMatcher(
      [...this.values].map((value) => ({ name: this.forms.get(value) as string, value })),
      redactionMarker,
    );
  }

  /** How many distinct secret values it redacts. */
  get size(): number {
    return this.values.size;
  }

  /** Whether this exact text is one of the secrets. */
  isSecret(value: string): boolean {
    return this.values.has(value);
  }

  /**
   * Whether `text` is or holds a secret anywhere (a proxy URL with a password, `Bearer KEY`, a
   * list of keys): for scrubbing a child's environment.
   */
  holdsSecret(text: string): boolean {
    return this.values.has(text) || this.redact(text) !== text;
  }

  /** Every secret in `text` replaced by its marker. */
  redact(text: string): string {
    if (this.pattern === null || text.length < MIN_SECRET_LENGTH) return text;
    return this.redactUpTo(text, text.length).text;
  }

  /**
   * For error messages, log lines and status events: the secrets, then anything shaped like a key.
   * A message shortened with a final "…" may end in the first part of a secret: from
   * CUT_SECRET_MIN_CHARS characters on, that part is replaced too.
   */
  redactMessage(text: string): string {
    if (this.pattern === null || !text.endsWith(ELLIPSIS)) return redactKeyShapes(this.redact(text));
    const body = text.slice(0, -ELLIPSIS.length);
    const held = this.heldSuffix(body);
    if (held < CUT_SECRET_MIN_CHARS) return redactKeyShapes(this.redact(text));
    const { text: head, end } = this.redactUpTo(body, body.length - held);
    // What is left is the cut secret, and any secret overlapping it: one marker names them all.
    const rest = body.slice(end);
    const tail = body.slice(body.length - held);
    const whole = [...rest.matchAll(this.pattern)].map((m) => this.nameOf(m[0]));
    const cut = [...this.forms].filter(([form]) => form.startsWith(tail)).map(([, name]) => name);
    return redactKeyShapes(`${head}${redactionMarker([...new Set([...whole, ...cut])])}${ELLIPSIS}`);
  }

  /** A copy of a JSON-like value with every string in it redacted (keys are left as they are). */
  redactDeep<T>(value: T, redactString: (text: string) => string = (t) => this.redact(t)): T {
    if (this.pattern === null) return value;
    return deepMap(value, redactString) as T;
  }

  /** A redactor for one stream of text deltas (one model call's reply). */
  stream(): StreamRedactor {
    return new StreamRedactor(this);
  }

  /**
   * For what a tool or command prints, which a prompt-injected model may have shaped to get past
   * `redact`: every secret, then every run of 8 or more of a secret's characters read with
   * everything but letters and digits left out (`grep -o .`, `cut -c 11-40`, `od -c`, `rev`).
   */
  redactOutput(text: string): string {
    if (this.pattern === null) return text;
    return this.spread.redact(this.redact(text));
  }

  /** redactOutput on every string of a JSON-like value, before JSON escapes (`\n`) split a run. */
  redactOutputDeep<T>(value: T): T {
    return this.redactDeep(value, (text) => this.redactOutput(text));
  }

  /** redactOutput for a command's output as its pipe gives it, piece by piece. */
  outputStream(): OutputRedactor {
    return new OutputRedactor(this.stream(), this.spread.stream());
  }

  /**
   * Redact `text`, committing only replacements and plain text that end at or before `limit`: a
   * secret that starts before `limit` but could still grow past it (or overlap one that does)
   * stops the output at its start. Returns the output and where in `text` it stops.
   */
  redactUpTo(text: string, limit: number): { text: string; end: number } {
    const pattern = this.pattern;
    if (pattern === null) return { text: text.slice(0, limit), end: limit };
    let out = "";
    let last = 0;
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      if (m.index >= limit) break;
      const span = this.overlapping(text, m.index, m.index + m[0].length, [this.nameOf(m[0])]);
      if (span.end > limit) {
        out += text.slice(last, m.index);
        return { text: out, end: m.index };
      }
      out += text.slice(last, m.index) + redactionMarker(span.names);
      last = span.end;
      pattern.lastIndex = span.end;
    }
    const end = Math.max(last, limit);
    return { text: out + text.slice(last, end), end };
  }

  /**
   * The longest suffix of `text` that is the start of a secret (and not a whole one): a stream
   * holds it back until the next piece shows whether the secret follows.
   */
  heldSuffix(text: string): number {
    const from = Math.max(0, text.length - this.maxLength + 1);
    for (let start = from; start < text.length; start++) {
      let node: TrieNode | undefined = this.trie;
      for (let i = start; i < text.length && node !== undefined; i++)
        node = node.next.get(text.charCodeAt(i));
      if (node !== undefined && node.next.size > 0) return text.length - start;
    }
    return 0;
  }

  /** A match at [start, end) grows over every secret that starts inside it and ends after it. */
  private overlapping(
    text: string,
    start: number,
    end: number,
    names: string[],
  ): { end: number; names: string[] } {
    const sticky = this.sticky as RegExp;
    let to = end;
    for (let at = start + 1; at < to; at++) {
      sticky.lastIndex = at;
      const m = sticky.exec(text);
      if (m === null || at + m[0].length <= to) continue;
      to = at + m[0].length;
      const name = this.nameOf(m[0]);
      if (!names.includes(name)) names.push(name);
    }
    return { end: to, names };
  }

  private nameOf(form: string): string {
    return this.forms.get(form) ?? "secret";
  }

  private insert(form: string): void {
    let node = this.trie;
    for (let i = 0; i < form.length; i++) {
      const code = form.charCodeAt(i);
      let child = node.next.get(code);
      if (child === undefined) {
        child = { next: new Map() };
        node.next.set(code, child);
      }
      node = child;
    }
  }
}

/**
 * Redacts text that arrives in pieces: a secret split over two (or more) deltas is replaced as if
 * the text had come whole. Only the end of the text that could be the start of a secret is held
 * back, so ordinary text streams on at once; `end()` gives what is held.
 */
export class StreamRedactor {
  private pending = "";

  constructor(private readonly redactor: Redactor) {}

  /** The redacted text that is safe to send now (may be ""). */
  push(delta: string): string {
    if (this.redactor.size === 0) return delta;
    this.pending += delta;
    let limit = this.pending.length - this.redactor.heldSuffix(this.pending);
    // Never split a surrogate pair between two deltas.
    if (limit > 0 && limit < this.pending.length && isHighSurrogate(this.pending.charCodeAt(limit - 1)))
      limit--;
    const { text, end } = this.redactor.redactUpTo(this.pending, limit);
    this.pending = this.pending.slice(end);
    return text;
  }

  /** The text still held, redacted: call when the stream ends (or before something else is sent). */
  end(): string {
    const rest = this.redactor.redact(this.pending);
    this.pending = "";
    return rest;
  }
}

/**
 * A command's output in pieces: whole secrets as StreamRedactor finds them (a piece's end that
 * could begin one is held back), then the runs of spread-out secrets in what it lets through.
 */
export class OutputRedactor {
  constructor(
    private readonly exact: StreamRedactor,
    private readonly spread: SpreadStream,
  ) {}

  push(piece: string): string {
    return this.spread.push(this.exact.push(piece));
  }

  end(): string {
    return this.spread.push(this.exact.end());
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/** `value` with `map` applied to every string in it; the very same object where nothing changed. */
function deepMap(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const mapped = deepMap(value[i], map);
      if (mapped === value[i]) continue;
      out ??= value.slice();
      out[i] = mapped;
    }
    return out ?? value;
  }
  if (value === null || typeof value !== "object") return value;
  const proto = Object.getPrototypeOf(value);
  // Only plain data is walked: a Buffer, a Date or a class instance is kept as it is.
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | null = null;
  for (const [key, v] of Object.entries(value)) {
    const mapped = deepMap(v, map);
    if (mapped === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    out[key] = mapped;
  }
  return out ?? value;
}
