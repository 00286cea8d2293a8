// How deep a JSON body may nest. Code that walks a parsed body recursively (the runs API's
// canonical form for the Idempotency-Key hash, JSON.stringify when a value is stored) runs out of
// stack on a few thousand levels; no request needs more than a few dozen. So the depth is checked
// on the raw bytes, before JSON.parse builds anything, and every route is covered at once.

/** The deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The byte offset where `bytes` first nests deeper than `max` objects and arrays, or -1 when it
 * never does. Brackets inside strings do not count; UTF-8 continuation bytes are all >= 0x80, so
 * they are never taken for a quote or a bracket. Invalid JSON is left for JSON.parse to name.
 */
export function depthPastLimit(bytes: Uint8Array, max = MAX_JSON_DEPTH): number {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) i = stringEnd(bytes, i);
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > max) return i;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return -1;
}

/**
 * The offset of the quote that closes the string opened at `open` (the end when none does).
 * The search is the native `indexOf`, because a body is mostly text: a quote preceded by an odd
 * number of backslashes is escaped and the search goes on.
 */
function stringEnd(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at < 0) return bytes.length;
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}
