// The login book of the dashboard's token mode: one-time login links, the logins they start, and
// each login's access and refresh tokens, kept in the profile's store so that every process that
// serves the dashboard (several, on several hosts, on a shared PostgreSQL store) keeps one book.
// Its invariants:
// - no secret is stored: a token is in the store only as the SHA-256 hash its record is keyed by,
//   and what a refresh answers is derived from the token presented (an HMAC with the profile's
//   server secret, login-tokens.ts), so any process can give that answer again without keeping it;
// - a link starts at most one login: the redeem claims the unused link (record.claim over the text
//   read) in one write with the new login and its first tokens, so of concurrent redeems exactly
//   one commits and the others read the link used;
// - a refresh token is rotated once: the first refresh claims it as rotated (when, and its
//   successor's hash) in one write with the successor, the new access token and the login's new
//   expiry. Refreshes with it within the grace window (default 5 s, at most 10 s), in any process,
//   derive the same successor and access token, check the successor against the recorded hash and
//   answer them: the wake burst of a device's tabs. Presented after the grace window it is a
//   replay, and the whole login is revoked;
// - every token lookup reads the token's login and refuses it once revoked, so revoking one login
//   record ends every token of it at once, those a racing refresh mints after the revocation too;
// - a login through an OIDC provider (startLogin) keeps the provider's refresh token sealed in its
//   record; each rotation, never a coalesced refresh, asks the provider first (options.recheck). A
//   refusal revokes the login; a provider that did not answer refuses the refresh and leaves the
//   login; a failure because another process's rotation used the provider's token first is no
//   refusal: the refresh reads again and coalesces with that rotation;
// - every rewrite is a claim over the text just read, never a put: a lost claim means another
//   process wrote first, and the operation reads again and decides anew (a bounded number of times).
import { randomBytes } from "node:crypto";
import { UsageError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { WriteOp } from "../../store/ops.js";
import type { StorePort } from "../../store/port.js";
import { claimOp, isRecordConflict, putOp } from "../../store/record-ops.js";
import {
  type Authenticated,
  isRefusal,
  type Login,
  type LoginEvent,
  type LoginRefusal,
  type LoginTokens,
  NEW_LINK,
  type NewLink,
  type Redeemed,
  type Refreshed,
  type RefusalReason,
  refusal,
} from "./login-outcomes.js";
import {
  ACCESS_KIND,
  type AccessRecord,
  accessRecord,
  expiringRecord,
  type Held,
  LINK_KIND,
  type LinkRecord,
  LOGIN_KIND,
  type LoginRecord,
  linkRecord,
  loginRecord,
  REFRESH_KIND,
  type RefreshRecord,
  readHeld,
  refreshRecord,
} from "./login-records.js";
import {
  CLIENT_MAX_CHARS,
  contended,
  DEFAULT_ACCESS_TTL_MS,
  DEFAULT_GRACE_MS,
  DEFAULT_LINK_TTL_MS,
  DEFAULT_REFRESH_TTL_MS,
  type FailedAttempts,
  iso,
  LINK_PATH,
  type LoginBookOptions,
  MAX_GRACE_MS,
  MAX_LINK_TTL_MS,
  MAX_TRIES,
  PRUNE_BATCH,
  type ProviderAnswer,
  type ProviderLogin,
  REVOKED_WHY,
  TOUCH_EVERY_MS,
  view,
} from "./login-settings.js";
import {
  deriveToken,
  hashToken,
  isTokenShaped,
  newToken,
  openToken,
  type SecretBytes,
  sameHash,
  sealToken,
  serverSecret,
} from "./login-tokens.js";

export type { LoginBookOptions, ProviderAnswer, ProviderLogin } from "./login-settings.js";

export class LoginBook {
  private readonly store: StorePort;
  private readonly now: () => number;
  private readonly bytes: SecretBytes;
  private readonly accessTtlMs: number;
  private readonly refreshTtlMs: number;
  private readonly graceMs: number;
  private readonly onEvent: (event: LoginEvent) => void;
  private readonly recheck: LoginBookOptions["recheck"];
  private readonly relogin: string | undefined;
  private secret: Promise<string> | null = null;
  private readonly failed: Record<RefusalReason, number> = {
    unknown: 0,
    expired: 0,
    used: 0,
    revoked: 0,
    replay: 0,
    provider: 0,
    provider_unavailable: 0,
  };

  constructor(options: LoginBookOptions) {
    this.store = options.store;
    const clock = options.deps?.clock;
    this.now = clock ? () => clock.now() : Date.now;
    this.bytes = options.secretBytes ?? randomBytes;
    this.accessTtlMs = options.accessTtlMs ?? DEFAULT_ACCESS_TTL_MS;
    this.refreshTtlMs = options.refreshTtlMs ?? DEFAULT_REFRESH_TTL_MS;
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.onEvent = options.onEvent ?? (() => {});
    this.recheck = options.recheck;
    this.relogin = options.relogin;
    if (!(this.graceMs >= 0 && this.graceMs <= MAX_GRACE_MS))
      throw new UsageError(`the refresh grace window must be 0 to ${MAX_GRACE_MS} ms, not ${this.graceMs}`);
    if (!(this.accessTtlMs > 0 && this.refreshTtlMs > this.accessTtlMs))
      throw new UsageError(
        `an access token must live more than 0 ms and less than a refresh token (${this.accessTtlMs} ms, ${this.refreshTtlMs} ms)`,
      );
  }

  /** A one-time login link; its token is in the answer only, the store keeps its hash. */
  async createLink(options: { ttlMs?: number; madeBy?: string } = {}): Promise<NewLink> {
    const ttlMs = options.ttlMs ?? DEFAULT_LINK_TTL_MS;
    if (!(Number.isInteger(ttlMs) && ttlMs > 0 && ttlMs <= MAX_LINK_TTL_MS))
      throw new UsageError(`a login link lives 1 ms to 7 days, not ${ttlMs} ms`, { hint: "e.g. --ttl 10m" });
    const now = this.now();
    const token = newToken(this.bytes);
    const link: LinkRecord = {
      link_id: newId("link_", now),
      created_at: now,
      expires_at: now + ttlMs,
      made_by: options.madeBy ?? "unknown",
      used_at: null,
      login_id: null,
    };
    await this.store.write([claimOp(LINK_KIND, hashToken(token), link, null, now)]);
    this.emit({
      layer: "dashboard",
      type: "login_link_created",
      link_id: link.link_id,
      expires_at: link.expires_at,
      login_id: null,
      message: `login link ${link.link_id} made by ${link.made_by}, usable once until ${iso(link.expires_at)}`,
      at: now,
    });
    return {
      link_id: link.link_id,
      token,
      url_path: `${LINK_PATH}?token=${token}`,
      expires_at: link.expires_at,
    };
  }

  /** Start a login with a link's token: once per link, before it expires. */
  async redeemLink(
    token: string,
    options: { client?: string | null } = {},
  ): Promise<Redeemed | LoginRefusal> {
    if (!isTokenShaped(token)) return this.refuse(refusal("link", "unknown"));
    const key = hashToken(token);
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const now = this.now();
      const held = await readHeld(this.store, LINK_KIND, key, linkRecord);
      if (held === null) return this.refuse(refusal("link", "unknown"));
      const link = held.value;
      if (link.used_at !== null)
        return this.refuse(refusal("link", "used", { at: link.used_at, login_id: link.login_id }));
      if (now >= link.expires_at) return this.refuse(refusal("link", "expired", { at: link.expires_at }));
      const started = this.newLogin(now, {
        link_id: link.link_id,
        made_by: link.made_by,
        client: options.client,
      });
      const used: LinkRecord = { ...link, used_at: now, login_id: started.login.login_id };
      const written = await this.claimed([claimOp(LINK_KIND, key, used, held.text, now), ...started.ops]);
      if (!written) continue;
      this.started(started.login, now);
      return { ok: true, ...started.tokens };
    }
    throw contended("redeeming a login link");
  }

  /**
   * Start a login for a user an OIDC provider vouched for (no link): its refresh token is kept
   * sealed, to recheck the user at each rotation.
   */
  async startLogin(options: {
    madeBy: string;
    client?: string | null;
    provider: ProviderLogin;
  }): Promise<Redeemed> {
    const now = this.now();
    const { provider } = options;
    const sealed =
      provider.refresh_token === null ? null : sealToken(await this.serverSecret(), provider.refresh_token);
    const started = this.newLogin(now, {
      link_id: "oidc",
      made_by: options.madeBy,
      client: options.client,
      provider: { issuer: provider.issuer, subject: provider.subject, sealed_refresh: sealed },
    });
    await this.store.write(started.ops);
    this.started(started.login, now);
    return { ok: true, ...started.tokens };
  }

  /**
   * Exchange a refresh token for its successor and a new access token. The same token within the
   * grace window of its rotation gets the same answer; after it, the login is revoked (replay).
   */
  async refresh(token: string): Promise<Refreshed | LoginRefusal> {
    if (!isTokenShaped(token)) return this.refuse(refusal("refresh", "unknown"));
    const key = hashToken(token);
    const secret = await this.serverSecret();
    const successor = deriveToken(secret, "refresh", token);
    const access = deriveToken(secret, "access", token);
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const now = this.now();
      const held = await readHeld(this.store, REFRESH_KIND, key, refreshRecord);
      if (held === null) return this.refuse(refusal("refresh", "unknown"));
      const presented = held.value;
      const login = await this.liveLogin("refresh", presented.login_id);
      if (isRefusal(login)) return login;
      if (now >= presented.expires_at)
        return this.refuse(
          refusal("refresh", "expired", { at: presented.expires_at, login_id: presented.login_id }),
        );
      if (presented.rotated_at !== null) return this.rotatedAgain(presented, successor, access, now);
      const vouched = await this.askProvider(login.value, secret);
      if (vouched !== null && !vouched.ok) {
        // Another process may have rotated it meanwhile (its own recheck used the provider's
        // token first): then this one coalesces with it, on the next read.
        const again = await readHeld(this.store, REFRESH_KIND, key, refreshRecord);
        if (again !== null && again.value.rotated_at !== null) continue;
        return this.providerRefused(presented.login_id, vouched);
      }
      const tokens = this.mint(presented.login_id, access, successor, now);
      const rotated: RefreshRecord = {
        ...presented,
        rotated_at: now,
        successor_hash: hashToken(successor),
      };
      const used: LoginRecord = {
        ...login.value,
        last_used_at: now,
        expires_at: tokens.refresh_expires_at,
        ...(vouched?.ok && login.value.provider
          ? {
              provider: { ...login.value.provider, sealed_refresh: sealToken(secret, vouched.refresh_token) },
            }
          : {}),
      };
      const written = await this.claimed([
        claimOp(REFRESH_KIND, key, rotated, held.text, now),
        ...this.tokenOps(tokens, now),
        claimOp(LOGIN_KIND, presented.login_id, used, login.text, now),
      ]);
      // Lost: another refresh rotated it first (read again: coalesce), or the login changed.
      if (!written) continue;
      this.emit({
        layer: "dashboard",
        type: "login_refreshed",
        coalesced: false,
        login_id: presented.login_id,
        message: `login ${presented.login_id} refreshed`,
        at: now,
      });
      return { ok: true, coalesced: false, ...tokens };
    }
    throw contended("refreshing a login");
  }

  /** An access token's login, or why it is refused. */
  async check(accessToken: string): Promise<Authenticated | LoginRefusal> {
    if (!isTokenShaped(accessToken)) return this.refuse(refusal("access", "unknown"));
    const now = this.now();
    const held = await readHeld(this.store, ACCESS_KIND, hashToken(accessToken), accessRecord);
    if (held === null) return this.refuse(refusal("access", "unknown"));
    if (now >= held.value.expires_at)
      return this.refuse(
        refusal("access", "expired", { at: held.value.expires_at, login_id: held.value.login_id }),
      );
    const login = await this.liveLogin("access", held.value.login_id);
    if (isRefusal(login)) return login;
    return { ok: true, login: view(await this.touch(login, now)) };
  }

  /** An access token's login, or null (unknown, expired, revoked). */
  async authenticate(accessToken: string): Promise<Login | null> {
    const checked = await this.check(accessToken);
    return checked.ok ? checked.login : null;
  }

  /** The logins not revoked and not expired, oldest first. */
  async list(): Promise<Login[]> {
    const now = this.now();
    const logins: Login[] = [];
    for (const row of await this.store.listRecords(LOGIN_KIND)) {
      const login = loginRecord.safeParse(row.value);
      if (login.success && login.data.revoked_at === null && now < login.data.expires_at)
        logins.push(view(login.data));
    }
    return logins.sort((a, b) => a.created_at - b.created_at);
  }

  /** End a login and every token of it; false when there is no such live login. */
  async revoke(loginId: string, by: "operator" | "replay" | "provider" = "operator"): Promise<boolean> {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const now = this.now();
      const held = await readHeld(this.store, LOGIN_KIND, loginId, loginRecord);
      if (held === null || held.value.revoked_at !== null) return false;
      const revoked: LoginRecord = { ...held.value, revoked_at: now, revoked_by: by };
      if (!(await this.claimed([claimOp(LOGIN_KIND, loginId, revoked, held.text, now)]))) continue;
      this.emit({
        layer: "dashboard",
        type: "login_revoked",
        by,
        login_id: loginId,
        message: `login ${loginId} revoked ${REVOKED_WHY[by]}`,
        at: now,
      });
      return true;
    }
    throw contended("revoking a login");
  }

  /**
   * Delete what has expired: links, access and refresh tokens, and logins past their end. A rotated
   * refresh token is kept until it expires, so its replay is still caught. Returns how many.
   */
  async prune(): Promise<number> {
    const now = this.now();
    const gone: WriteOp[] = [];
    for (const kind of [LINK_KIND, ACCESS_KIND, REFRESH_KIND, LOGIN_KIND]) {
      for (const row of await this.store.listRecords(kind)) {
        const expiring = expiringRecord.safeParse(row.value);
        if (expiring.success && now >= expiring.data.expires_at) gone.push(putOp(kind, row.key, null, now));
      }
    }
    for (let at = 0; at < gone.length; at += PRUNE_BATCH)
      await this.store.write(gone.slice(at, at + PRUNE_BATCH));
    return gone.length;
  }

  /** Refusals counted since this book was made (an expired access token is routine: not counted). */
  failedAttempts(): FailedAttempts {
    const by_reason = { ...this.failed };
    return { total: Object.values(by_reason).reduce((a, b) => a + b, 0), by_reason };
  }

  /** A new login's record and first tokens, and the writes that keep them. */
  private newLogin(
    now: number,
    from: {
      link_id: string;
      made_by: string;
      client?: string | null | undefined;
      provider?: LoginRecord["provider"];
    },
  ): { login: LoginRecord; tokens: LoginTokens; ops: WriteOp[] } {
    const loginId = newId("login_", now);
    const tokens = this.mint(loginId, newToken(this.bytes), newToken(this.bytes), now);
    const login: LoginRecord = {
      login_id: loginId,
      created_at: now,
      link_id: from.link_id,
      made_by: from.made_by,
      client: from.client ? from.client.slice(0, CLIENT_MAX_CHARS) : null,
      last_used_at: now,
      expires_at: tokens.refresh_expires_at,
      revoked_at: null,
      revoked_by: null,
      ...(from.provider ? { provider: from.provider } : {}),
    };
    return {
      login,
      tokens,
      ops: [claimOp(LOGIN_KIND, loginId, login, null, now), ...this.tokenOps(tokens, now)],
    };
  }

  private started(login: LoginRecord, now: number): void {
    this.emit({
      layer: "dashboard",
      type: "login_created",
      login_id: login.login_id,
      link_id: login.link_id,
      message: `login ${login.login_id} started ${login.link_id === "oidc" ? "through the identity provider" : `from link ${login.link_id}`} (made by ${login.made_by})`,
      at: now,
    });
  }

  /** A login through a provider, asked again; null when there is nothing to ask (no provider, no token). */
  private async askProvider(login: LoginRecord, secret: string): Promise<ProviderAnswer | null> {
    const sealed = login.provider?.sealed_refresh;
    if (sealed === undefined || sealed === null || this.recheck === undefined) return null;
    const token = openToken(secret, sealed);
    if (token === null)
      return { ok: false, transient: false, message: "its provider refresh token could not be unsealed" };
    return this.recheck(token);
  }

  /** The provider would not vouch: a transient failure leaves the login, a refusal ends it. */
  private async providerRefused(
    loginId: string,
    answer: { transient: boolean; message: string },
  ): Promise<LoginRefusal> {
    if (answer.transient)
      return this.refuse(
        refusal("refresh", "provider_unavailable", { login_id: loginId, detail: answer.message }),
      );
    await this.revoke(loginId, "provider");
    return this.refuse(refusal("refresh", "provider", { login_id: loginId, detail: answer.message }));
  }

  /** A token rotated before: the same answer within the grace window, else a replay. */
  private async rotatedAgain(
    presented: RefreshRecord,
    successor: string,
    access: string,
    now: number,
  ): Promise<Refreshed | LoginRefusal> {
    const loginId = presented.login_id;
    const rotatedAt = presented.rotated_at ?? now;
    // A clock behind the rotating process's reads a negative lateness: within the window.
    const late = now - rotatedAt;
    if (late > this.graceMs) {
      const refused = refusal("refresh", "replay", {
        at: rotatedAt,
        login_id: loginId,
        late_ms: late,
        grace_ms: this.graceMs,
      });
      this.emit({
        layer: "dashboard",
        type: "login_replay",
        rotated_at: rotatedAt,
        login_id: loginId,
        message: refused.message,
        at: now,
      });
      await this.revoke(loginId, "replay");
      return this.refuse(refused);
    }
    const successorHash = hashToken(successor);
    // Rotated under another server secret (its record was replaced): the answer it gave cannot be
    // given again here.
    if (presented.successor_hash === null || !sameHash(presented.successor_hash, successorHash))
      return this.refuse(refusal("refresh", "unknown", { login_id: loginId }));
    const next = await readHeld(this.store, REFRESH_KIND, successorHash, refreshRecord);
    const minted = await readHeld(this.store, ACCESS_KIND, hashToken(access), accessRecord);
    if (next === null || minted === null)
      return this.refuse(refusal("refresh", "unknown", { login_id: loginId }));
    this.emit({
      layer: "dashboard",
      type: "login_refreshed",
      coalesced: true,
      login_id: loginId,
      message: `login ${loginId} refreshed again with a token rotated ${Math.max(0, late)} ms before (within the grace window)`,
      at: now,
    });
    return {
      ok: true,
      coalesced: true,
      login_id: loginId,
      access_token: access,
      access_expires_at: minted.value.expires_at,
      refresh_token: successor,
      refresh_expires_at: next.value.expires_at,
    };
  }

  /** The login of a token, or its refusal when it is gone or revoked. */
  private async liveLogin(
    action: "refresh" | "access",
    loginId: string,
  ): Promise<Held<LoginRecord> | LoginRefusal> {
    const login = await readHeld(this.store, LOGIN_KIND, loginId, loginRecord);
    if (login === null) return this.refuse(refusal(action, "unknown", { login_id: loginId }));
    if (login.value.revoked_at !== null)
      return this.refuse(
        refusal(action, "revoked", {
          at: login.value.revoked_at,
          revoked_by: login.value.revoked_by,
          login_id: loginId,
        }),
      );
    return login;
  }

  /** Note the login's last use, at most once a minute. */
  private async touch(login: Held<LoginRecord>, now: number): Promise<LoginRecord> {
    if (now - login.value.last_used_at < TOUCH_EVERY_MS) return login.value;
    const touched: LoginRecord = { ...login.value, last_used_at: now };
    try {
      await this.store.write([claimOp(LOGIN_KIND, touched.login_id, touched, login.text, now)]);
    } catch {
      // Informational only: a lost claim (a rotation or revocation wrote first) or a store that
      // cannot write now must not refuse a valid token; the next use tries again.
    }
    return touched;
  }

  private mint(loginId: string, access: string, refresh: string, now: number): LoginTokens {
    return {
      login_id: loginId,
      access_token: access,
      access_expires_at: now + this.accessTtlMs,
      refresh_token: refresh,
      refresh_expires_at: now + this.refreshTtlMs,
    };
  }

  /** The records of a login's new tokens, each claimed against its absence. */
  private tokenOps(tokens: LoginTokens, now: number): WriteOp[] {
    const refresh: RefreshRecord = {
      login_id: tokens.login_id,
      issued_at: now,
      expires_at: tokens.refresh_expires_at,
      rotated_at: null,
      successor_hash: null,
    };
    const access: AccessRecord = {
      login_id: tokens.login_id,
      issued_at: now,
      expires_at: tokens.access_expires_at,
    };
    return [
      claimOp(REFRESH_KIND, hashToken(tokens.refresh_token), refresh, null, now),
      claimOp(ACCESS_KIND, hashToken(tokens.access_token), access, null, now),
    ];
  }

  /** Write `ops` in one transaction; false when a claim of it lost (nothing of it was applied). */
  private async claimed(ops: WriteOp[]): Promise<boolean> {
    try {
      await this.store.write(ops);
      return true;
    } catch (error) {
      if (isRecordConflict(error)) return false;
      throw error;
    }
  }

  private serverSecret(): Promise<string> {
    if (this.secret === null) {
      const loading = serverSecret(this.store, this.bytes, this.now());
      // A failure is not kept: the next call reads again.
      loading.catch(() => {
        if (this.secret === loading) this.secret = null;
      });
      this.secret = loading;
    }
    return this.secret;
  }

  private refuse(given: LoginRefusal): LoginRefusal {
    const refused =
      this.relogin === undefined ? given : { ...given, hint: given.hint.replace(NEW_LINK, this.relogin) };
    if (!(refused.action === "access" && refused.reason === "expired")) {
      this.failed[refused.reason]++;
      this.emit({
        layer: "dashboard",
        type: "login_refused",
        action: refused.action,
        reason: refused.reason,
        login_id: refused.login_id,
        message: refused.message,
        at: this.now(),
      });
    }
    return refused;
  }

  private emit(event: LoginEvent): void {
    try {
      this.onEvent(event);
    } catch {
      // A listener's failure is its own: the change it hears of is committed either way.
    }
  }
}
