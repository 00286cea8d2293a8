// Secrets spread out or cut up in what a command prints: `grep -o .` puts one character a line,
// `od -c` spaces between them, `cut -c 11-40` prints a piece, `rev` turns it around. The text is
// read with every character but an ASCII letter or digit left out and letters folded to one case,
// and every run of SPREAD_RUN or more characters of a secret (forwards or backwards) in it is
// replaced, with whatever lies between its characters, by the secret's marker. Mapping back is
// exact: the run's first and last characters are where they stand in the original text.

/** A secret and the name its marker shows (the shape of redact.ts's NamedSecret). */
export interface SpreadSecret {
  name: string;
  value: string;
}

/** The shortest piece of a secret that is redacted wherever it appears, spread out or not. */
export const SPREAD_RUN = 8;
/** SPREAD_RUN - 1 as a mask: the ring of the last SPREAD_RUN digits (SPREAD_RUN is a power of 2). */
const RING = SPREAD_RUN - 1;

// A piece's code: its 8 digits (0-35) at 6 bits each, as two 24-bit halves kept in small integers
// while the text is read (the older four digits in `high`), and as one exact number for the map.
const BITS = 6;
const HALF_SHIFT = BITS * (SPREAD_RUN / 2 - 1);
const HALF_MASK = (1 << (BITS * (SPREAD_RUN / 2))) - 1;
const HALF_SPAN = HALF_MASK + 1;

/** A piece's slot in a filter of 2^bits slots. */
function filterSlot(high: number, low: number, shift: number): number {
  return (Math.imul(high, 0x9e3779b1) ^ Math.imul(low, 0x85ebca6b)) >>> shift;
}
/** How every marker begins (redact.ts's redactionMarker). */
const MARKER_START = "[redacted:";

/** Each ASCII character's digit in base 36 (0-9, then a-z with A-Z folded onto them), or -1. */
const DIGITS = Int8Array.from({ length: 128 }, (_, code) => {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 122) return code - 87;
  if (code >= 65 && code <= 90) return code - 55;
  return -1;
});

function digitOf(code: number): number {
  return code < 128 ? (DIGITS[code] as number) : -1;
}

function digitsOf(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const d = digitOf(text.charCodeAt(i));
    if (d >= 0) out.push(d);
  }
  return out;
}

/** Where a run of secrets lies in a text: [start, end) in its UTF-16 units, and whose it is. */
export interface SpreadSpan {
  start: number;
  end: number;
  names: string[];
}

export class SpreadMatcher {
  /** Every SPREAD_RUN-character piece of every secret (both ways), as its base-36 code → name. */
  private readonly pieces = new Map<number, string>();
  /**
   * A bit per slot a piece falls in, about 64 slots a piece (50 keys of 64 characters: 64 KiB),
   * so most positions of a text are passed over without a look into the map.
   */
  private readonly filter: Uint8Array;
  private readonly shift: number;

  constructor(
    secrets: readonly SpreadSecret[],
    private readonly marker: (names: readonly string[]) => string,
  ) {
    for (const { name, value } of secrets) {
      const digits = digitsOf(value);
      for (const form of [digits, [...digits].reverse()]) {
        let high = 0;
        let low = 0;
        for (let i = 0; i < form.length; i++) {
          high = ((high << BITS) | (low >>> HALF_SHIFT)) & HALF_MASK;
          low = ((low << BITS) | (form[i] as number)) & HALF_MASK;
          if (i < SPREAD_RUN - 1) continue;
          const code = high * HALF_SPAN + low;
          if (!this.pieces.has(code)) this.pieces.set(code, name);
        }
      }
    }
    const bits = Math.min(24, Math.max(6, Math.ceil(Math.log2(this.pieces.size * 64 + 1))));
    this.shift = 32 - bits;
    this.filter = new Uint8Array(2 ** (bits - 3));
    for (const code of this.pieces.keys()) {
      const slot = filterSlot(Math.floor(code / HALF_SPAN), code % HALF_SPAN, this.shift);
      this.filter[slot >> 3] = (this.filter[slot >> 3] as number) | (1 << (slot & 7));
    }
  }

  /** How many distinct pieces it looks for (0: it redacts nothing). */
  get size(): number {
    return this.pieces.size;
  }

  /**
   * The runs in `text`. `before` is the digits of what came just before it in a stream (at most
   * SPREAD_RUN - 1): a run that began there continues into `text` and is caught from its start.
   */
  spans(text: string, before: readonly number[] = []): SpreadSpan[] {
    return this.scan(text, before).spans;
  }

  /** The runs, and the last digits of `text` a run could go on from (for the next piece). */
  scan(text: string, before: readonly number[] = []): { spans: SpreadSpan[]; tail: number[] } {
    const spans: SpreadSpan[] = [];
    // Where the last SPREAD_RUN digits stand in `text` (-1: in what came before).
    const at = new Int32Array(SPREAD_RUN).fill(-1);
    const digits = new Int8Array(SPREAD_RUN);
    let high = 0;
    let low = 0;
    let count = 0;
    for (const d of before.slice(-(SPREAD_RUN - 1))) {
      high = ((high << BITS) | (low >>> HALF_SHIFT)) & HALF_MASK;
      low = ((low << BITS) | d) & HALF_MASK;
      digits[count % SPREAD_RUN] = d;
      count++;
    }
    let open: SpreadSpan | null = null;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      // A marker is no part of the text: nothing runs through it.
      if (c === 91 && text.startsWith(MARKER_START, i)) {
        const close = text.indexOf("]", i);
        if (close > 0) {
          i = close;
          count = 0;
          continue;
        }
      }
      const d = digitOf(c);
      if (d < 0) continue;
      high = ((high << BITS) | (low >>> HALF_SHIFT)) & HALF_MASK;
      low = ((low << BITS) | d) & HALF_MASK;
      at[count & RING] = i;
      digits[count & RING] = d;
      count++;
      if (count < SPREAD_RUN) continue;
      const slot = filterSlot(high, low, this.shift);
      if (((this.filter[slot >> 3] as number) & (1 << (slot & 7))) === 0) continue;
      const name = this.pieces.get(high * HALF_SPAN + low);
      if (name === undefined) continue;
      // The oldest of the last SPREAD_RUN digits is the piece's first character.
      const start = Math.max(0, at[count & RING] as number);
      if (open !== null && start < open.end) {
        open.end = i + 1;
        if (!open.names.includes(name)) open.names.push(name);
        continue;
      }
      if (open !== null) spans.push(open);
      open = { start, end: i + 1, names: [name] };
    }
    if (open !== null) spans.push(open);
    const kept = Math.min(count, SPREAD_RUN - 1);
    const tail = Array.from({ length: kept }, (_, k) => digits[(count - kept + k) % SPREAD_RUN] as number);
    return { spans, tail };
  }

  /** `text` with every run replaced by its marker; the very same string when there is none. */
  redact(text: string, before: readonly number[] = []): string {
    return this.apply(text, this.spans(text, before));
  }

  /** `text` with each span replaced by its marker. */
  apply(text: string, spans: readonly SpreadSpan[]): string {
    if (spans.length === 0) return text;
    let out = "";
    let last = 0;
    for (const span of spans) {
      out += text.slice(last, span.start) + this.marker(span.names);
      last = span.end;
    }
    return out + text.slice(last);
  }

  /** A redactor for text that arrives in pieces (a command's output as the pipe gives it). */
  stream(): SpreadStream {
    return new SpreadStream(this);
  }
}

/**
 * Runs across the pieces of a stream: the last digits of what went out are carried into the next
 * piece, so a run that continues there is redacted from where it continues. Nothing is held back
 * (a command's output is never delayed): a run cut by a piece's end shows at most its first
 * SPREAD_RUN - 1 characters, never a whole run.
 */
export class SpreadStream {
  private before: number[] = [];

  constructor(private readonly matcher: SpreadMatcher) {}

  push(text: string): string {
    if (text === "" || this.matcher.size === 0) return text;
    const { spans, tail } = this.matcher.scan(text, this.before);
    this.before = tail;
    return this.matcher.apply(text, spans);
  }
}
