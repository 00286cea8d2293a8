// The login book on real stores, no mocks: one-time links, rotation with a wake burst of refreshes
// coalesced across processes (child processes on the same SQLite file or PostgreSQL database, and
// two store handles in this one), replays after the grace window revoking the whole login, expiry
// and revocation. The clock is fake (the children get its reading), so windows are exact.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { type FakeDeps, fakeDeps } from "../../../test/helpers/fake-time.js";
import { closeAfterEach } from "../../../test/helpers/opened.js";
import { usePostgresCluster } from "../../../test/helpers/postgres.js";
import { openPostgresAt } from "../../../test/helpers/store-engines.js";
import { tempDir, tempProfile } from "../../../test/helpers/tmp.js";
import { until } from "../../../test/helpers/until.js";
import type { StorePort } from "../../store/port.js";
import { storeOptions } from "../../store/registry.js";
import { Store } from "../../store/store.js";
import { LoginBook } from "./login-book.js";
import type { LoginEvent, LoginRefusal, LoginTokens, Refreshed } from "./login-outcomes.js";
import { ACCESS_KIND, LINK_KIND, LOGIN_KIND, REFRESH_KIND, SECRET_KIND } from "./login-records.js";
import { DEFAULT_ACCESS_TTL_MS, DEFAULT_REFRESH_TTL_MS, LINK_PATH } from "./login-settings.js";

const REFRESHER = new URL("../../../test/fixtures/login-refresher.mjs", import.meta.url).pathname;
const BUILT = new URL("../../../dist/dashboard/auth/login-book.js", import.meta.url);

const cluster = usePostgresCluster();
const opened = closeAfterEach();

/** Two handles on one store (two dashboards' connections), and how a child process opens it. */
interface Shared {
  stores: [StorePort, StorePort];
  childArgs: string[];
}

const engines: { name: "sqlite" | "postgres"; open(): Promise<Shared> }[] = [
  {
    name: "sqlite",
    async open() {
      const paths = tempProfile();
      const open = async () =>
        opened.add(await Store.open({ ...storeOptions(paths), integrityCheckTimeoutMs: 0 }), (s) =>
          s.close(),
        );
      return { stores: [await open(), await open()], childArgs: ["sqlite", paths.home, tempDir()] };
    },
  },
  {
    name: "postgres",
    async open() {
      const url = await cluster().createDatabase();
      const spool = tempDir();
      const first = (await openPostgresAt(url, { spoolDir: `${spool}/a` })).store;
      const second = (await openPostgresAt(url, { spoolDir: `${spool}/b` })).store;
      return { stores: [first, second], childArgs: ["postgres", url, `${spool}/child`] };
    },
  },
];

function book(store: StorePort, time: FakeDeps, events?: LoginEvent[]): LoginBook {
  return new LoginBook({ store, deps: time, ...(events ? { onEvent: (e) => events.push(e) } : {}) });
}

async function sqliteBook(events?: LoginEvent[]) {
  const time = fakeDeps();
  const paths = tempProfile();
  const store = opened.add(await Store.open({ ...storeOptions(paths), integrityCheckTimeoutMs: 0 }), (s) =>
    s.close(),
  );
  return { time, store, book: book(store, time, events) };
}

async function loggedIn(b: LoginBook): Promise<LoginTokens> {
  const link = await b.createLink({ madeBy: "test" });
  return ok(await b.redeemLink(link.token, { client: "vitest" }));
}

function ok<T extends { ok: true }>(answer: T | LoginRefusal): T {
  if (!answer.ok) throw new Error(`refused: ${answer.reason}: ${answer.message}`);
  return answer;
}

function refused(answer: { ok: true } | LoginRefusal): LoginRefusal {
  if (answer.ok) throw new Error("expected a refusal, got tokens");
  return answer;
}

/** A refresher process on the shared store, ready: `go` sends it the token and gets its answers. */
async function refresher(args: string[], now: number, count: number) {
  const child = opened.child(
    spawn(process.execPath, [REFRESHER, ...args, String(now), String(count)], {
      stdio: ["pipe", "pipe", "inherit"],
    }),
  );
  const seen: string[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => seen.push(line));
  let exit: number | null = null;
  child.once("exit", (code) => {
    exit = code ?? -1;
  });
  const saw = (line: string) => () => {
    if (seen.includes(line)) return true;
    if (exit !== null) throw new Error(`the refresher exited (${exit}) before "${line}": ${seen.join("\n")}`);
    return false;
  };
  await until(saw("ready"), 20_000, "the refresher is ready");
  return {
    async go(token: string): Promise<Refreshed[]> {
      child.stdin.write(`go ${token}\n`);
      await until(saw("done"), 20_000, "the refresher answered");
      return seen.slice(seen.indexOf("ready") + 1, seen.indexOf("done")).map((l) => ok(JSON.parse(l)));
    },
  };
}

describe.each(engines)("the login book on $name, shared by processes", (engine) => {
  it("a link redeemed twice at once starts exactly one login", async () => {
    const { stores } = await engine.open();
    const time = fakeDeps();
    const [a, b] = [book(stores[0], time), book(stores[1], time)];
    const link = await a.createLink({ madeBy: "test" });
    const answers = await Promise.all([
      ...Array.from({ length: 3 }, () => a.redeemLink(link.token)),
      ...Array.from({ length: 3 }, () => b.redeemLink(link.token)),
    ]);
    const won = answers.filter((x) => x.ok);
    expect(won).toHaveLength(1);
    expect(answers.filter((x) => !x.ok).map((x) => !x.ok && x.reason)).toEqual(Array(5).fill("used"));
    expect((await b.list()).map((l) => l.login_id)).toEqual(won.map((w) => w.login_id));
  });

  it("20 refreshes with one token at once, from 3 processes and 2 handles: one successor, the login lives, a replay revokes it", async () => {
    if (!existsSync(BUILT)) throw new Error("run `npm run build` first (the refresher processes run dist/)");
    const { stores, childArgs } = await engine.open();
    const time = fakeDeps();
    const events: LoginEvent[] = [];
    const [a, b] = [book(stores[0], time, events), book(stores[1], time, events)];
    const first = await loggedIn(a);
    const children = await Promise.all([0, 1, 2].map(() => refresher(childArgs, time.clock.now(), 4)));

    // The wake burst: 12 refreshes in the children and 8 here, all with one token, all at once.
    const answers = (
      await Promise.all([
        ...children.map((c) => c.go(first.refresh_token)),
        Promise.all(Array.from({ length: 4 }, () => a.refresh(first.refresh_token).then(ok))),
        Promise.all(Array.from({ length: 4 }, () => b.refresh(first.refresh_token).then(ok))),
      ])
    ).flat();
    expect(answers).toHaveLength(20);
    expect(new Set(answers.map((x) => x.refresh_token)).size).toBe(1);
    expect(new Set(answers.map((x) => x.access_token)).size).toBe(1);
    expect(new Set(answers.map((x) => x.refresh_expires_at)).size).toBe(1);
    expect(answers.filter((x) => !x.coalesced)).toHaveLength(1);
    const successor = answers[0] as Refreshed;
    expect(successor.refresh_token).not.toBe(first.refresh_token);
    expect(successor.login_id).toBe(first.login_id);
    expect((await b.authenticate(successor.access_token))?.login_id).toBe(first.login_id);
    expect((await a.authenticate(first.access_token))?.login_id).toBe(first.login_id);
    expect((await a.list()).map((l) => l.login_id)).toEqual([first.login_id]);

    // Late in the grace window, the same answer still.
    time.advance(4_000);
    const late = ok(await b.refresh(first.refresh_token));
    expect([late.coalesced, late.refresh_token, late.access_token]).toEqual([
      true,
      successor.refresh_token,
      successor.access_token,
    ]);

    // The successor works: it rotates in its turn.
    const next = ok(await a.refresh(successor.refresh_token));
    expect(next.coalesced).toBe(false);
    expect(new Set([next.refresh_token, successor.refresh_token, first.refresh_token]).size).toBe(3);
    expect(await a.authenticate(next.access_token)).not.toBeNull();

    // The first token again, past the grace window of its rotation: a replay.
    time.advance(2_000);
    const replay = refused(await b.refresh(first.refresh_token));
    expect(replay.reason).toBe("replay");
    expect(replay.login_id).toBe(first.login_id);
    expect(replay.message).toMatch(/already exchanged at .* 6 s later, past the 5 s grace window/);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["login_replay", "login_revoked"]));

    // Every token of the login is dead: the successors, and the access tokens.
    for (const bk of [a, b]) {
      expect(refused(await bk.refresh(next.refresh_token)).reason).toBe("revoked");
      expect(refused(await bk.refresh(successor.refresh_token)).reason).toBe("revoked");
      for (const access of [first.access_token, successor.access_token, next.access_token])
        expect(await bk.authenticate(access)).toBeNull();
    }
    expect(refused(await a.check(next.access_token)).message).toMatch(
      /was revoked at .* after one of its refresh tokens was replayed/,
    );
    expect(await a.list()).toEqual([]);
  });
});

describe("the login book", () => {
  it("a link logs in once, and its login authenticates", async () => {
    const events: LoginEvent[] = [];
    const { book: b, time } = await sqliteBook(events);
    const link = await b.createLink({ ttlMs: 600_000, madeBy: "tenax dashboard link" });
    expect(link.url_path).toBe(`${LINK_PATH}?token=${link.token}`);
    expect(link.expires_at).toBe(time.clock.now() + 600_000);

    const tokens = ok(await b.redeemLink(link.token, { client: "Firefox on a phone" }));
    expect(tokens.access_expires_at).toBe(time.clock.now() + DEFAULT_ACCESS_TTL_MS);
    expect(tokens.refresh_expires_at).toBe(time.clock.now() + DEFAULT_REFRESH_TTL_MS);
    const again = refused(await b.redeemLink(link.token));
    expect([again.reason, again.login_id]).toEqual(["used", tokens.login_id]);
    expect(again.message).toMatch(/already used at .*: a link logs in once/);
    expect(again.hint).toBe("ask for a new login link: tenax dashboard link");

    time.advance(90_000);
    const login = await b.authenticate(tokens.access_token);
    expect(login).toEqual({
      login_id: tokens.login_id,
      created_at: link.expires_at - 600_000,
      last_used_at: time.clock.now(),
      expires_at: tokens.refresh_expires_at,
      made_by: "tenax dashboard link",
      link_id: link.link_id,
      client: "Firefox on a phone",
    });
    expect(await b.list()).toEqual([login]);
    expect(events.map((e) => e.type)).toEqual(["login_link_created", "login_created", "login_refused"]);
    expect(b.failedAttempts()).toEqual({
      total: 1,
      by_reason: {
        unknown: 0,
        expired: 0,
        used: 1,
        revoked: 0,
        replay: 0,
        provider: 0,
        provider_unavailable: 0,
      },
    });
  });

  it("refuses an expired link, an unknown one and anything not shaped like a token", async () => {
    const { book: b, time } = await sqliteBook();
    const link = await b.createLink({ ttlMs: 60_000 });
    time.advance(60_000);
    const expired = refused(await b.redeemLink(link.token));
    expect(expired.reason).toBe("expired");
    expect(expired.message).toBe(`this login link expired at ${new Date(link.expires_at).toISOString()}`);
    const other = await b.createLink();
    const unknown = `${other.token.slice(0, -1)}${other.token.endsWith("A") ? "B" : "A"}`;
    expect(refused(await b.redeemLink(unknown)).reason).toBe("unknown");
    expect(refused(await b.redeemLink("../../etc/passwd")).reason).toBe("unknown");
    expect(refused(await b.refresh("")).reason).toBe("unknown");
    expect(await b.authenticate(`${"x".repeat(43)}`)).toBeNull();
    expect(b.failedAttempts().by_reason).toMatchObject({ expired: 1, unknown: 4 });
    await expect(b.createLink({ ttlMs: 0 })).rejects.toThrow(/a login link lives 1 ms to 7 days/);
  });

  it("an expired access token is refused, and a refresh gives a working one", async () => {
    const { book: b, time } = await sqliteBook();
    const first = await loggedIn(b);
    time.advance(DEFAULT_ACCESS_TTL_MS);
    const expired = refused(await b.check(first.access_token));
    expect([expired.reason, expired.login_id]).toEqual(["expired", first.login_id]);
    expect(b.failedAttempts().total).toBe(0);
    const next = ok(await b.refresh(first.refresh_token));
    expect(next.access_expires_at).toBe(time.clock.now() + DEFAULT_ACCESS_TTL_MS);
    expect((await b.authenticate(next.access_token))?.login_id).toBe(first.login_id);
    // The login's end moves with each rotation.
    expect((await b.list())[0]?.expires_at).toBe(next.refresh_expires_at);
  });

  it("a login unused past its refresh token's life ends", async () => {
    const { book: b, time } = await sqliteBook();
    const first = await loggedIn(b);
    time.advance(DEFAULT_REFRESH_TTL_MS);
    expect(refused(await b.refresh(first.refresh_token)).message).toMatch(
      /^login login_\w+ expired at .*: it went unused too long$/,
    );
    expect(await b.list()).toEqual([]);
  });

  it("revoke ends a login and every token of it", async () => {
    const events: LoginEvent[] = [];
    const { book: b } = await sqliteBook(events);
    const first = await loggedIn(b);
    const other = await loggedIn(b);
    expect(await b.revoke(first.login_id)).toBe(true);
    expect(await b.revoke(first.login_id)).toBe(false);
    expect(await b.revoke("login_nope")).toBe(false);
    expect(await b.authenticate(first.access_token)).toBeNull();
    const refresh = refused(await b.refresh(first.refresh_token));
    expect(refresh.reason).toBe("revoked");
    expect(refresh.message).toMatch(/was revoked at .* by the operator/);
    expect((await b.list()).map((l) => l.login_id)).toEqual([other.login_id]);
    expect(await b.authenticate(other.access_token)).not.toBeNull();
    expect(events.filter((e) => e.type === "login_revoked")).toHaveLength(1);
  });

  it("keeps no secret in the store, only hashes, and prunes what expired", async () => {
    const { book: b, store, time } = await sqliteBook();
    const link = await b.createLink();
    const first = ok(await b.redeemLink(link.token));
    const next = ok(await b.refresh(first.refresh_token));
    const kinds = [LINK_KIND, LOGIN_KIND, REFRESH_KIND, ACCESS_KIND];
    const rows = (await Promise.all(kinds.map((k) => store.listRecords(k)))).flat();
    expect(rows).toHaveLength(6);
    const stored = JSON.stringify(rows);
    for (const secret of [
      link.token,
      first.access_token,
      first.refresh_token,
      next.access_token,
      next.refresh_token,
    ])
      expect(stored).not.toContain(secret);
    expect(await store.listRecords(SECRET_KIND)).toHaveLength(1);

    time.advance(DEFAULT_ACCESS_TTL_MS);
    // The link and both access tokens have expired; the refresh tokens and the login have not.
    expect(await b.prune()).toBe(3);
    expect(refused(await b.redeemLink(link.token)).reason).toBe("unknown");
    time.advance(DEFAULT_REFRESH_TTL_MS);
    expect(await b.prune()).toBe(3);
    expect((await Promise.all(kinds.map((k) => store.listRecords(k)))).flat()).toEqual([]);
  });

  it("refuses a grace window over 10 s", async () => {
    const { store } = await sqliteBook();
    expect(() => new LoginBook({ store, graceMs: 10_001 })).toThrow(/grace window must be 0 to 10000 ms/);
  });
});
