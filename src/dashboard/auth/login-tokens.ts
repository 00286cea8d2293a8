// The login book's secrets: random tokens, their hashes (all the store ever holds of them), the
// tokens a refresh derives from the one presented, and the profile's server secret they are
// derived with.
//
// Why the server secret is a record in the store: every process that serves the profile's
// dashboard (several, on several hosts, when they share a PostgreSQL store) must derive the same
// successor from the same token, and the store is the one thing they all share. A file in the
// profile folder is per host, and a value in config or .env would be one more thing the operator
// has to set. It is made once, by whichever process needs it first, with a record.claim against
// its absence: a process that loses the race reads the winner's. Someone who can read the store
// learns the secret but still cannot mint a token: a derived token needs the token it derives
// from, and the store holds only hashes of tokens.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";
import { TenaxError } from "../../core/errors.js";
import type { StorePort } from "../../store/port.js";
import { claimOp, isRecordConflict } from "../../store/record-ops.js";
import { parseText, SECRET_KEY, SECRET_KIND, type SecretRecord, secretRecord } from "./login-records.js";

/** Random bytes for tokens and the server secret: crypto.randomBytes, or a test's own. */
export type SecretBytes = (size: number) => Buffer;

/** Bytes of randomness in a token and in the server secret. */
export const TOKEN_BYTES = 32;

/** What a token looks like: 32 bytes, base64url without padding (43 characters). */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function newToken(bytes: SecretBytes): string {
  return bytes(TOKEN_BYTES).toString("base64url");
}

/** Whether `text` can be a token at all: anything else is refused before the store is asked. */
export function isTokenShaped(text: string): boolean {
  return TOKEN_SHAPE.test(text);
}

/** The record key of a token: its SHA-256, base64url. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/** What a refresh with `presented` answers: the successor refresh token, or the access token. */
export function deriveToken(secret: string, purpose: "refresh" | "access", presented: string): string {
  return createHmac("sha256", Buffer.from(secret, "base64url"))
    .update(`${purpose}:${presented}`)
    .digest("base64url");
}

/**
 * A provider's refresh token sealed for the store (AES-256-GCM under a key derived from the server
 * secret): unlike Tenax's own tokens it must be given back to the provider, so it cannot be kept as
 * a hash. The secret is a record of the same store, so a whole copy of the store can unseal it; a
 * copy of the login records alone (a log, a partial dump) cannot.
 */
export function sealToken(secret: string, token: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealKey(secret), iv);
  const body = Buffer.concat([cipher.update(token, "utf8"), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString("base64url")).join(".");
}

/** A sealed token back, or null when it was sealed under another secret or changed. */
export function openToken(secret: string, sealed: string): string | null {
  const [iv, tag, body] = sealed.split(".").map((part) => Buffer.from(part, "base64url"));
  if (iv === undefined || tag === undefined || body === undefined) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", sealKey(secret), iv);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}

function sealKey(secret: string): Buffer {
  return createHmac("sha256", Buffer.from(secret, "base64url")).update("seal:provider-refresh").digest();
}

/** Two hashes compared in constant time. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The profile's server secret, made on first use (one winner across every process). */
export async function serverSecret(store: StorePort, bytes: SecretBytes, now: number): Promise<string> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const text = await store.getRecordText(SECRET_KIND, SECRET_KEY);
    if (text !== null) return checked(text);
    const made: SecretRecord = { secret: newToken(bytes), created_at: now };
    try {
      await store.write([claimOp(SECRET_KIND, SECRET_KEY, made, null, now)]);
      return made.secret;
    } catch (error) {
      // Another process made it first: read its one.
      if (!isRecordConflict(error)) throw error;
    }
  }
  throw new TenaxError("login_secret_unreadable", "the dashboard's login secret could not be read back", {
    hint: "check the store with `tenax doctor`",
  });
}

function checked(text: string): string {
  const record = parseText(text, secretRecord);
  if (record !== null) return record.secret;
  // Never replaced here: a new secret turns the rotations still in their grace window into replays.
  throw new TenaxError(
    "login_secret_invalid",
    `the dashboard's login secret (record ${SECRET_KIND}/${SECRET_KEY}) is not readable: it was changed outside Tenax`,
    { hint: "check the store with `tenax doctor`" },
  );
}
