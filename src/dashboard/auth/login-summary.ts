// The dashboard's logins as `tenax status` and the page sum them up, read from the store alone:
// how many are live, the newest use, and how many ended after a replayed refresh token or a
// provider's refusal in the last day (each is a possible theft, or a provider that dropped a user).
import { errorMessage } from "../../core/errors.js";
import type { StoreReads } from "../../store/port.js";
import { LOGIN_KIND, loginRecord } from "./login-records.js";

export interface LoginSummary {
  mode: "token" | "oidc" | "none";
  live: number;
  /** When a live login was last used; null with none. */
  newest_use: number | null;
  /** Logins ended in the last 24 h because a rotated refresh token came back, or the provider refused. */
  ended_by_replay: number;
  ended_by_provider: number;
  /** Why the logins could not be read (the store's trouble is its own layer's); null when they were. */
  problem: string | null;
}

const DAY_MS = 24 * 3600 * 1000;

export async function loginSummary(
  reader: StoreReads | null,
  mode: LoginSummary["mode"],
  now: number,
): Promise<LoginSummary> {
  const summary: LoginSummary = {
    mode,
    live: 0,
    newest_use: null,
    ended_by_replay: 0,
    ended_by_provider: 0,
    problem: null,
  };
  if (reader === null || mode === "none") return summary;
  let rows: Awaited<ReturnType<StoreReads["listRecords"]>>;
  try {
    rows = await reader.listRecords(LOGIN_KIND);
  } catch (error) {
    return { ...summary, problem: `the logins could not be read: ${errorMessage(error)}` };
  }
  for (const row of rows) {
    const parsed = loginRecord.safeParse(row.value);
    if (!parsed.success) continue;
    const login = parsed.data;
    if (login.revoked_at === null && now < login.expires_at) {
      summary.live++;
      summary.newest_use = Math.max(summary.newest_use ?? 0, login.last_used_at);
    } else if (login.revoked_at !== null && now - login.revoked_at < DAY_MS) {
      if (login.revoked_by === "replay") summary.ended_by_replay++;
      if (login.revoked_by === "provider") summary.ended_by_provider++;
    }
  }
  return summary;
}

/** One line for people. */
export function describeLogins(s: LoginSummary): string {
  if (s.mode === "none") return "no login (dashboard.auth.mode none, loopback only)";
  if (s.problem !== null) return `${s.mode} mode; ${s.problem}`;
  const used = s.newest_use === null ? "" : `, last used ${new Date(s.newest_use).toISOString()}`;
  const ended = [
    s.ended_by_replay > 0 ? `${s.ended_by_replay} ended by a replayed refresh token in the last 24 h` : "",
    s.ended_by_provider > 0 ? `${s.ended_by_provider} ended by the identity provider in the last 24 h` : "",
  ].filter(Boolean);
  return `${s.mode} mode, ${s.live} live login${s.live === 1 ? "" : "s"}${used}${ended.length > 0 ? `; ${ended.join("; ")} (tenax events --layer dashboard)` : ""}`;
}
