// A short, stable name for an API key that is safe to store, log and show: the first 12 hex digits
// of its SHA-256. A new key is a new fingerprint, which is what lets "disabled until the key
// changes" work without ever keeping the key.
import { createHash } from "node:crypto";

export function keyFingerprint(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex").slice(0, 12);
}
