// What the login book answers and tells: its results, its refusals (each in words fit for a 401
// body and an audit line, never with a token in them) and its events, for the event feed and the
// audit trail.

/** What was attempted: redeeming a link, refreshing, authenticating with an access token, or logging in through an OIDC provider. */
export type LoginAction = "link" | "refresh" | "access" | "oidc";

/**
 * unknown: no such token (mistyped, pruned, another profile's); expired; used: a link already
 * redeemed; revoked: its login was ended; replay: a rotated refresh token presented again after
 * the grace window, which revokes its login; provider: the OIDC provider refused to vouch for the
 * user again, which ends the login; provider_unavailable: it could not be asked (it did not
 * answer in time): the login stays, and the refresh may be tried again.
 */
export type RefusalReason =
  | "unknown"
  | "expired"
  | "used"
  | "revoked"
  | "replay"
  | "provider"
  | "provider_unavailable";

export interface LoginRefusal {
  ok: false;
  action: LoginAction;
  reason: RefusalReason;
  /** What happened, for the 401 body and the audit line. */
  message: string;
  /** What to do next. */
  hint: string;
  /** The login concerned, when one is known. */
  login_id: string | null;
}

export function isRefusal(value: object): value is LoginRefusal {
  return "ok" in value && value.ok === false;
}

/** A login as `tenax dashboard logins` shows it. */
export interface Login {
  login_id: string;
  created_at: number;
  last_used_at: number;
  /** When it ends unless refreshed before. */
  expires_at: number;
  /** What made the link it started from. */
  made_by: string;
  link_id: string;
  /** What the client said it is when it redeemed the link, or null. */
  client: string | null;
}

export interface NewLink {
  link_id: string;
  /** The secret: shown once, in the URL, never stored. */
  token: string;
  /** Path and query of the link on the dashboard's address. */
  url_path: string;
  expires_at: number;
}

/** A login's tokens, as a redeem or a refresh answers them. */
export interface LoginTokens {
  login_id: string;
  access_token: string;
  access_expires_at: number;
  refresh_token: string;
  refresh_expires_at: number;
}

export type Redeemed = { ok: true } & LoginTokens;
/** `coalesced`: the token had just been rotated, and this is the same answer its rotation gave. */
export type Refreshed = { ok: true; coalesced: boolean } & LoginTokens;
export type Authenticated = { ok: true; login: Login };

interface EventBase {
  layer: "dashboard";
  /** The login concerned, when one is known. */
  login_id: string | null;
  message: string;
  at: number;
}

/** What the book tells through `onEvent`; `type` values are snake_case, as TenaxEvent's are. */
export type LoginEvent =
  | (EventBase & { type: "login_link_created"; link_id: string; expires_at: number })
  | (EventBase & { type: "login_created"; link_id: string })
  | (EventBase & { type: "login_refreshed"; coalesced: boolean })
  | (EventBase & { type: "login_refused"; action: LoginAction; reason: RefusalReason })
  | (EventBase & { type: "login_replay"; rotated_at: number })
  | (EventBase & { type: "login_revoked"; by: "operator" | "replay" | "provider" });

/** What a refusal's words are made of. */
export interface RefusalFacts {
  login_id?: string | null;
  /** When it expired, was used, was revoked, or (replay) was rotated. */
  at?: number;
  revoked_by?: "operator" | "replay" | "provider" | null;
  /** provider, provider_unavailable: what the provider's answer (or silence) was. */
  detail?: string;
  /** Replay: how long after its rotation it came back, and the grace window. */
  late_ms?: number;
  grace_ms?: number;
}

/** How to log in again in mode token; a book for mode oidc says its own (LoginBookOptions.relogin). */
export const NEW_LINK = "ask for a new login link: tenax dashboard link";

const REVOKED_BY = {
  operator: " by the operator",
  replay: " after one of its refresh tokens was replayed",
  provider: " when the identity provider no longer vouched for its user",
} as const;

export function refusal(action: LoginAction, reason: RefusalReason, facts: RefusalFacts = {}): LoginRefusal {
  const { message, hint } = words(action, reason, facts);
  return { ok: false, action, reason, message, hint, login_id: facts.login_id ?? null };
}

function words(
  action: LoginAction,
  reason: RefusalReason,
  facts: RefusalFacts,
): { message: string; hint: string } {
  const when = facts.at === undefined ? "" : ` at ${new Date(facts.at).toISOString()}`;
  const login = facts.login_id ? `login ${facts.login_id}` : "the login";
  const what = action === "link" ? "login link" : action === "refresh" ? "refresh token" : "access token";
  switch (reason) {
    case "unknown":
      return action === "link"
        ? { message: "this login link is not known: mistyped, or made for another profile", hint: NEW_LINK }
        : {
            message: `this ${what} is not known`,
            hint: action === "access" ? "refresh the session, or log in again" : `log in again: ${NEW_LINK}`,
          };
    case "expired":
      if (action === "link") return { message: `this login link expired${when}`, hint: NEW_LINK };
      if (action === "access")
        return { message: `this access token expired${when}`, hint: "refresh the session" };
      return {
        message: `${login} expired${when}: it went unused too long`,
        hint: `log in again: ${NEW_LINK}`,
      };
    case "used":
      return { message: `this login link was already used${when}: a link logs in once`, hint: NEW_LINK };
    case "revoked":
      return {
        message: `${login} was revoked${when}${REVOKED_BY[facts.revoked_by ?? "operator"]}`,
        hint: `log in again: ${NEW_LINK}`,
      };
    case "replay": {
      const late = Math.round((facts.late_ms ?? 0) / 1000);
      const grace = Math.round((facts.grace_ms ?? 0) / 1000);
      return {
        message: `this refresh token was already exchanged${when} and came back ${late} s later, past the ${grace} s grace window: a replayed token may be a stolen one, so ${login} and every token of it are revoked`,
        hint: `log in again: ${NEW_LINK}; if no one else should have had it, check where the dashboard was opened`,
      };
    }
    case "provider":
      return {
        message: `the identity provider no longer vouches for the user of ${login}, which is ended: ${facts.detail ?? "it refused"}`,
        hint: "log in again at /auth/login; if you should still have access, ask who runs the provider",
      };
    case "provider_unavailable":
      return {
        message: `the identity provider could not recheck ${login}: ${facts.detail ?? "it did not answer"}`,
        hint: "the login stays: try again in a moment",
      };
    default: {
      const never: never = reason;
      throw new Error(`unknown refusal reason ${String(never)}`);
    }
  }
}
