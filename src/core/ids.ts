// Identifiers that sort by creation time (so listings and rowids agree) and never collide across
// processes: 10 characters of milliseconds and 16 of randomness, Crockford base32.
import { randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

// Random bytes are drawn 4 KiB at a time: one system call per 256 ids instead of one per id.
const pool = Buffer.alloc(4096);
let offset = pool.length;

function randomBytes16(): Buffer {
  if (offset + 16 > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  return bytes;
}

export function newId(prefix = "", now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rand = "";
  for (const byte of randomBytes16()) rand += ALPHABET[byte % 32];
  return `${prefix}${time}${rand}`;
}

/**
 * When an id of newId was made (its first 10 characters after the prefix, ms since the epoch), or
 * null when it is not one: how a reader tells an id made after what it last read from an older one.
 */
export function idTime(id: string, prefix = ""): number | null {
  if (!id.startsWith(prefix) || id.length !== prefix.length + 26) return null;
  let time = 0;
  for (const char of id.slice(prefix.length, prefix.length + 10)) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return null;
    time = time * 32 + digit;
  }
  for (const char of id.slice(prefix.length + 10)) if (!ALPHABET.includes(char)) return null;
  return time;
}
