// How the login book keeps its data in the store's records table, one kind per concern, each
// secret only as its SHA-256 hash (base64url) in the key:
//   dashboard_auth_secret  key "hmac"         the profile's server secret (derives rotated tokens)
//   dashboard_link         key HASH(link)     a one-time login link: when it expires, when it was used
//   dashboard_login        key LOGIN_ID       a login: made by which link, last used, ends, revoked
//   dashboard_refresh      key HASH(refresh)  a refresh token: its login, expiry, and once rotated,
//                                             when and the hash of its successor
//   dashboard_access       key HASH(access)   an access token: its login and expiry
// Records carry no session id. What is read back is checked; a token record that fails the check
// is treated as absent (so its token is refused), and fields a newer Tenax added are kept on a
// rewrite. Every rewrite is a record.claim over the text just read, never a put, so no write of
// one process silently undoes another's (a revocation above all).
import { z } from "zod";
import type { StoreReads } from "../../store/port.js";

export const SECRET_KIND = "dashboard_auth_secret";
export const SECRET_KEY = "hmac";
export const LINK_KIND = "dashboard_link";
export const LOGIN_KIND = "dashboard_login";
export const REFRESH_KIND = "dashboard_refresh";
export const ACCESS_KIND = "dashboard_access";

export const secretRecord = z.looseObject({
  /** 32 random bytes, base64url. */
  secret: z.string().min(43),
  created_at: z.number(),
});
export type SecretRecord = z.infer<typeof secretRecord>;

export const linkRecord = z.looseObject({
  link_id: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  /** What asked for the link (`tenax dashboard link`, `tenax up`), for the login list and the audit. */
  made_by: z.string(),
  used_at: z.number().nullable(),
  /** The login its one use started. */
  login_id: z.string().nullable(),
});
export type LinkRecord = z.infer<typeof linkRecord>;

export const loginRecord = z.looseObject({
  login_id: z.string(),
  created_at: z.number(),
  link_id: z.string(),
  made_by: z.string(),
  /** What the client said it is (its User-Agent), or null. */
  client: z.string().nullable(),
  /** Written at most once a minute by authentication, and by every rotation. */
  last_used_at: z.number(),
  /** When its newest refresh token expires: the login ends then unless refreshed. */
  expires_at: z.number(),
  revoked_at: z.number().nullable(),
  /**
   * Why: `operator` (revoke), `replay` (a rotated refresh token presented after the grace window),
   * or `provider` (the OIDC provider no longer vouches for the user).
   */
  revoked_by: z.enum(["operator", "replay", "provider"]).nullable(),
  /** A login through an OIDC provider: who it vouched for, and its refresh token, sealed (login-tokens.ts). */
  provider: z
    .object({ issuer: z.string(), subject: z.string(), sealed_refresh: z.string().nullable() })
    .nullable()
    .optional(),
});
export type LoginRecord = z.infer<typeof loginRecord>;

export const refreshRecord = z.looseObject({
  login_id: z.string(),
  issued_at: z.number(),
  expires_at: z.number(),
  /** When it was exchanged for its successor; null while it is the login's current one. */
  rotated_at: z.number().nullable(),
  /** The successor's hash, written with rotated_at. */
  successor_hash: z.string().nullable(),
});
export type RefreshRecord = z.infer<typeof refreshRecord>;

export const accessRecord = z.looseObject({
  login_id: z.string(),
  issued_at: z.number(),
  expires_at: z.number(),
});
export type AccessRecord = z.infer<typeof accessRecord>;

/** What every kind but the secret has: when it may be deleted (prune). */
export const expiringRecord = z.looseObject({ expires_at: z.number() });

/** A record as read: its checked value, and its text as stored (a claim's `expect`). */
export interface Held<T> {
  value: T;
  text: string;
}

/** One record, checked; null when absent, not JSON, or not of its kind's shape. */
export async function readHeld<T>(
  store: Pick<StoreReads, "getRecordText">,
  kind: string,
  key: string,
  schema: z.ZodType<T>,
): Promise<Held<T> | null> {
  const text = await store.getRecordText(kind, key);
  if (text === null) return null;
  const value = parseText(text, schema);
  return value === null ? null : { value, text };
}

export function parseText<T>(text: string, schema: z.ZodType<T>): T | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? parsed.data : null;
}
