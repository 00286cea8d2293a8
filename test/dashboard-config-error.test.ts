// `tenax dashboard` on a config.yaml that does not load, from the built CLI: it serves anyway (on
// the port config.yaml asks for, read leniently), prints the error once with what it does about
// it, shows it on the page's config layer with its file, line and key, and shows the layers once
// the file is fixed, without a restart.
import { writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { startListening } from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

interface Layers {
  ok: boolean;
  error?: { code: string; message: string };
}

describe("tenax dashboard with a config that does not load", () => {
  it("serves on, shows the error with its line, and the fixed config once it is saved", async () => {
    const port = await freePort();
    const good = `dashboard: { port: ${port} }\n`;
    const paths = profileWith(`${good}gateway: { port: 8642, no_such_key: true }\n`);
    const dashboard = await startListening(paths.home, ["dashboard"], "dashboard");
    try {
      expect(dashboard.url).toBe(`http://127.0.0.1:${port}`);
      const said = dashboard.stderr();
      expect(said.match(/no_such_key: unknown key/g)?.length, said).toBe(1);
      expect(said).toContain(`config error: ${paths.config}:2: gateway.no_such_key: unknown key`);
      expect(said).toMatch(
        /the dashboard serves anyway, on the defaults, and shows this error until config\.yaml is fixed/,
      );
      // The config that does not load leaves the login at its default (token): the printed link logs in.
      expect(dashboard.login).not.toBeNull();
      const broken = (await (await dashboard.fetch("/api/layers")).json()) as Layers;
      expect(broken.ok).toBe(false);
      expect(broken.error?.message).toContain(`${paths.config}:2: gateway.no_such_key: unknown key`);

      writeFileSync(paths.config, good);
      // The page polls the layers every second; the fixed file is read at its next look.
      const deadline = Date.now() + 15_000;
      let layers = broken;
      while (!layers.ok && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        layers = (await (await dashboard.fetch("/api/layers")).json()) as Layers;
      }
      expect(layers.ok).toBe(true);
    } finally {
      dashboard.child.kill("SIGTERM");
      expect(await dashboard.exited).toBe(0);
    }
  }, 60_000);
});
