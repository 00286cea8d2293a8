// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the config is written with a literal ${VAR} reference on purpose
// A profile moved to PostgreSQL from the outside, as an operator does it: sessions made by a real
// gateway on SQLite, `tenax store copy --to URL` into an empty database of a private cluster, the
// counts it prints, a second copy into the same (no longer empty) database refused; then the
// gateway, the read commands and status on PostgreSQL, with state.db never created.
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { usePostgresCluster } from "./helpers/postgres.js";

const cluster = usePostgresCluster();

const chat = (gw: GatewayProcess, content: string) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });

describe("tenax store copy", () => {
  it("copies a gateway's sessions into an empty database, prints the counts and the config change, and refuses a second copy", async () => {
    requireBuild();
    const { home, paths } = await simProfile();
    const gw = await startGateway(home);
    for (const question of ["first question", "second question"])
      expect((await chat(gw, question)).status).toBe(200);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);

    const url = await cluster().createDatabase();
    const copied = await tenaxAsync(home, ["store", "copy", "--to", url]);
    expect(copied.stderr).toMatch(/copying sessions: 2 of 2/);
    expect(copied.stdout).toMatch(
      /^copied 2 sessions, 4 messages, 2 turns, \d+ records? and 0 stored responses into postgres:\/\/tenax@127\.0\.0\.1:\d+\/\w+; every count read back matches/,
    );
    expect(copied.stdout).toContain(`${paths.state} is unchanged`);
    expect(copied.stdout).toContain("engine: postgres");
    expect(copied.status).toBe(0);

    const again = await tenaxAsync(home, ["store", "copy", "--to", url, "--json"]);
    expect(again.status).not.toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      error: {
        code: "store_copy_target_not_empty",
        message: expect.stringMatching(/already holds Tenax data \(2 sessions, 4 messages/),
      },
    });
  }, 120_000);

  it("is refused while the profile's gateway runs, and for a URL that is not PostgreSQL's", async () => {
    requireBuild();
    const { home } = await simProfile();
    const gw = await startGateway(home);
    const url = await cluster().createDatabase();
    const refused = await tenaxAsync(home, ["store", "copy", "--to", url]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/the gateway of profile 'default' runs \(pid \d+\)/);
    expect(refused.stderr).toMatch(/stop it first/);
    gw.child.kill("SIGTERM");
    await gw.exited;
    const wrong = await tenaxAsync(home, ["store", "copy", "--to", "mysql://db/x"]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/--to: expected a postgresql:\/\/ URL/);
  }, 120_000);

  it("runs a fresh profile on PostgreSQL: turns stored there, listed by the CLI, named by status, and no state.db", async () => {
    requireBuild();
    const { home, paths } = await simProfile();
    const url = await cluster().createDatabase();
    appendFileSync(paths.config, 'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }\n');
    writeFileSync(paths.env, `TENAX_DATABASE_URL=${url}\n`, { mode: 0o600 });
    const gw = await startGateway(home);
    for (const question of ["first on postgres", "second on postgres"])
      expect((await chat(gw, question)).status).toBe(200);
    const listed = await tenaxAsync(home, ["sessions", "list", "--json"]);
    expect(listed.status).toBe(0);
    expect(JSON.stringify(JSON.parse(listed.stdout))).toContain("first on postgres");
    const stats = await tenaxAsync(home, ["sessions", "stats"]);
    expect(stats.stdout).toMatch(/^sessions {3}2$/m);
    expect(stats.stdout).toMatch(/^size {7}\d+\.\d MiB database$/m);
    expect(stats.stdout).toContain("indexed as each message is written");
    const status = await tenaxAsync(home, ["status", "--json"]);
    const store = (
      JSON.parse(status.stdout) as {
        components: { store: { status: string; detail: string; sessions: number } };
      }
    ).components.store;
    expect(store).toMatchObject({ status: "ok", sessions: 2 });
    expect(store.detail).toMatch(
      /^postgres:\/\/tenax@127\.0\.0\.1:\d+\/\w+ \(PostgreSQL, schema \d+, answered in \d+ ms\): 2 sessions, 4 messages/,
    );
    // The dashboard reads the same database, names it without a password, and finds by search;
    // the one thing it writes there is the login its printed link started.
    const dashboard = await startDashboard(home);
    for (let i = 0; i < 50 && !dashboard.stdout().includes("(it writes only logins)"); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(dashboard.stdout()).toMatch(
      /reading postgres:\/\/tenax@127\.0\.0\.1:\d+\/\w+ \(it writes only logins\)/,
    );
    expect(dashboard.login).not.toBeNull();
    const logins = await tenaxAsync(home, ["dashboard", "logins", "--json"]);
    expect(logins.status).toBe(0);
    expect((JSON.parse(logins.stdout) as { logins: unknown[] }).logins).toHaveLength(1);
    const overview = (await (await dashboard.fetch("/api/overview")).json()) as { store: string };
    expect(overview.store).toMatch(/^postgres:\/\/tenax@127\.0\.0\.1:\d+\/\w+$/);
    for (let i = 0; i < 3; i++) {
      const listed = (await (await dashboard.fetch("/api/sessions")).json()) as { sessions: unknown[] };
      expect(listed.sessions).toHaveLength(2);
    }
    const found = await (await dashboard.fetch("/api/search?q=postgres")).text();
    expect(found).toContain("first on postgres");
    dashboard.child.kill("SIGTERM");
    await dashboard.exited;
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(existsSync(paths.state)).toBe(false);
  }, 120_000);
});
