// `tenax up` (what `npm start` runs): it serves the profile's gateway in the foreground, says what
// does not run yet, and stops cleanly on SIGTERM.
import { existsSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { simProfile, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

describe("tenax up", () => {
  it("serves the gateway until SIGTERM, and says the dashboard is not built yet", async () => {
    const { paths, home } = await simProfile();
    const up = await startGateway(home, ["--gateway-port", "0"], ["up"]);
    const live = await fetch(`${up.url}/health/live`);
    expect(live.status).toBe(200);
    const reply = await fetch(`${up.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hello from up" }] }),
    });
    expect(
      ((await reply.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message
        .content,
    ).toBe("echo: hello from up");
    expect(up.stderr()).toMatch(/the dashboard is not built yet/);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
  });

  it("says so when the built-in simulator answers", async () => {
    const paths = profileWith();
    const up = await startGateway(paths.home, ["--gateway-port", "0"], ["up"]);
    expect(up.stderr()).toMatch(/built-in local simulator answers/);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });
});
