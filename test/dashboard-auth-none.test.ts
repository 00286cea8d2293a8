// Mode none is for loopback only: refused at start off loopback (gateway-bind-errors.test.ts), and
// by every request when config.yaml is edited to it while the dashboard serves another address.
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LiveConfig } from "../src/config/live-config.js";
import { buildDashboardApp } from "../src/dashboard/app.js";
import { Dashboard } from "../src/dashboard/server.js";
import { inProcessLogin } from "./helpers/dashboard-login.js";
import { profileWith } from "./helpers/temp-home.js";

describe("dashboard.auth.mode none", () => {
  it("lets loopback in without a login, and refuses every request once edited in on another address", async () => {
    const paths = profileWith("gateway: { port: 1 }\ndashboard: { auth: { mode: none } }\n");
    const live = new LiveConfig(paths);
    let at = { host: "127.0.0.1", port: 8080 };
    const dashboard = new Dashboard({
      paths,
      config: () => live.current(),
      version: "test",
      listening: () => at,
    });
    const app = buildDashboardApp(dashboard);
    try {
      const open = await app.inject({ url: "/api/overview", headers: { host: "127.0.0.1:8080" } });
      expect(open.statusCode).toBe(200);

      // The same profile served on every interface, in token mode, with a login.
      at = { host: "0.0.0.0", port: 8080 };
      writeFileSync(paths.config, "gateway: { port: 1 }\ndashboard: { auth: { mode: token } }\n");
      const login = await inProcessLogin(dashboard);
      const withLogin = await app.inject({
        url: "/api/overview",
        headers: { host: "127.0.0.1:8080", ...login.headers },
      });
      expect(withLogin.statusCode).toBe(200);
      expect(
        (await app.inject({ url: "/api/overview", headers: { host: "127.0.0.1:8080" } })).statusCode,
      ).toBe(401);

      // Edited to none while it serves 0.0.0.0: nothing is shown, with or without a login.
      writeFileSync(paths.config, "gateway: { port: 1 }\ndashboard: { auth: { mode: none } }\n");
      for (const headers of [{}, login.headers]) {
        const refused = await app.inject({
          url: "/api/sessions",
          headers: { host: "127.0.0.1:8080", ...headers },
        });
        expect(refused.statusCode).toBe(403);
        expect(refused.json().error.code).toBe("auth_none_off_loopback");
        expect(refused.json().error.message).toMatch(/listens on 0\.0\.0\.0/);
      }
    } finally {
      await app.close();
      await dashboard.auth.close();
    }
  });
});
