// The login book's settings and the small pieces it is built from: its defaults and bounds, its
// options, what an OIDC provider answers a recheck, and how a login and a contended write are
// told. The book itself (login-book.ts) is the behaviour: links, logins, rotations.
import type { Deps } from "../../core/deps.js";
import { TenaxError } from "../../core/errors.js";
import type { StorePort } from "../../store/port.js";
import type { Login, LoginEvent, RefusalReason } from "./login-outcomes.js";
import type { LoginRecord } from "./login-records.js";
import type { SecretBytes } from "./login-tokens.js";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;

export const DEFAULT_ACCESS_TTL_MS = 15 * MINUTE;
export const DEFAULT_REFRESH_TTL_MS = 30 * DAY;
export const DEFAULT_GRACE_MS = 5 * SECOND;
/** Longer, and a stolen token would share its login's successor for too long. */
export const MAX_GRACE_MS = 10 * SECOND;
export const DEFAULT_LINK_TTL_MS = 10 * MINUTE;
export const MAX_LINK_TTL_MS = 7 * DAY;
/** Where a link is opened; the token goes in its query. */
export const LINK_PATH = "/auth/link";

/** Authentication writes a login's last use at most this often (not a write per request). */
export const TOUCH_EVERY_MS = MINUTE;
export const CLIENT_MAX_CHARS = 200;
/** Reads and claims of one operation before it gives up: each lost claim means another writer won. */
export const MAX_TRIES = 8;
/** Deletions of one prune per write. */
export const PRUNE_BATCH = 500;

export interface LoginBookOptions {
  store: StorePort;
  /** The clock (expiries, the grace window). */
  deps?: Partial<Pick<Deps, "clock">>;
  /**
   * Random bytes for tokens and the server secret; crypto.randomBytes by default. Not Deps.random,
   * which is a number source for jitter, not a cryptographic one.
   */
  secretBytes?: SecretBytes;
  accessTtlMs?: number;
  refreshTtlMs?: number;
  /** How long after a rotation the rotated token still gets the same successor (at most 10 s). */
  graceMs?: number;
  /** Told after each change is committed; a listener that throws is ignored. */
  onEvent?: (event: LoginEvent) => void;
  /**
   * Logins through an OIDC provider: ask it again, with its refresh token, whether it still vouches
   * for the user, at each rotation (not at a coalesced refresh). Its new refresh token is kept.
   */
  recheck?: (providerRefresh: string) => Promise<ProviderAnswer>;
  /** How a refusal tells the user to log in again; by default a new link (mode token). */
  relogin?: string;
}

/** What the provider said to a recheck: its new refresh token, or why not (transient: try later). */
export type ProviderAnswer =
  | { ok: true; refresh_token: string }
  | { ok: false; transient: boolean; message: string };

/** Who an OIDC provider vouched for, and its refresh token (null: it gave none, no rechecks). */
export interface ProviderLogin {
  issuer: string;
  subject: string;
  refresh_token: string | null;
}

export interface FailedAttempts {
  total: number;
  by_reason: Record<RefusalReason, number>;
}

/** A login as the book answers it: its record without the revocation and provider fields. */
export function view(login: LoginRecord): Login {
  return {
    login_id: login.login_id,
    created_at: login.created_at,
    last_used_at: login.last_used_at,
    expires_at: login.expires_at,
    made_by: login.made_by,
    link_id: login.link_id,
    client: login.client,
  };
}

export const REVOKED_WHY = {
  operator: "by the operator",
  replay: "after a replayed refresh token",
  provider: "as the identity provider no longer vouches for its user",
} as const;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** An operation that lost every claim it tried: other writers kept changing its records. */
export function contended(what: string): TenaxError {
  return new TenaxError(
    "login_contended",
    `${what} lost to other writers ${MAX_TRIES} times in a row (the store's records kept changing)`,
    { hint: "try again" },
  );
}
