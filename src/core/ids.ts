// Identifiers that sort by creation time (so listings and rowids agree) and never collide across
// processes: 10 characters of milliseconds and 16 of randomness, Crockford base32.
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

export function newId(prefix = "", now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let rand = "";
  for (const byte of bytes) rand += ALPHABET[byte % 32];
  return `${prefix}${time}${rand}`;
}
