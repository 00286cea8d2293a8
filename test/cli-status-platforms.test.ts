// `tenax status` on the chat platforms, with a real gateway process polling the Telegram simulator:
// connected with its last update while all is well (exit 0), degraded with the poll's last error
// while Telegram has an outage (exit 1), ok again once it is lifted, and down naming `tenax up`
// once the gateway is stopped (exit 2).
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { startGateway } from "./helpers/gateway.js";
import { TG_OWNER, telegramProfile } from "./helpers/telegram-gateway.js";

beforeAll(() => requireBuild());

interface Row {
  platform: string;
  connected: boolean | null;
  last_update_at: number | null;
  last_error: string | null;
}
interface Report {
  status: string;
  components: { platforms: { status: string; detail: string; next: string | null; platforms: Row[] } };
}

async function status(home: string): Promise<{ code: number | null; report: Report }> {
  const run = await tenaxAsync(home, ["status", "--json"]);
  return { code: run.status, report: JSON.parse(run.stdout) as Report };
}

/** Poll `tenax status --json` until `check` holds on its report; returns that run. */
async function statusUntil(home: string, what: string, check: (r: Report) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const run = await status(home);
    if (check(run.report)) return run;
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}; last platforms: ${JSON.stringify(run.report.components.platforms)}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("tenax status on the chat platforms", () => {
  it("connected with its last update, degraded with the last error in an outage, down naming tenax up when the gateway stops", async () => {
    const { tg, home } = await telegramProfile();
    const gw = await startGateway(home);
    tg.injectMessage({ chat: TG_OWNER, from: TG_OWNER, text: "hello" });
    await tg.waitForMessages(TG_OWNER, 1, { timeoutMs: 20_000 });

    const ok = await statusUntil(home, "telegram connected with an update", (r) => {
      const row = r.components.platforms.platforms[0];
      return row?.connected === true && row.last_update_at !== null;
    });
    expect(ok.code).toBe(0);
    expect(ok.report.components.platforms.status).toBe("ok");
    expect(ok.report.components.platforms.detail).toMatch(
      /^telegram: connected \(polling\), last update .* ago, nothing waiting$/,
    );

    // Telegram answers every call 502: the next poll fails and the gateway says so.
    tg.startOutage({ mode: "error", status: 502 });
    const degraded = await statusUntil(
      home,
      "telegram degraded",
      (r) => r.components.platforms.status === "degraded",
    );
    expect(degraded.code).toBe(1);
    expect(degraded.report.status).toBe("degraded");
    const row = degraded.report.components.platforms.platforms[0];
    expect(row).toMatchObject({ platform: "telegram", connected: false });
    expect(row?.last_error).toMatch(/502|Bad Gateway/);
    expect(degraded.report.components.platforms.detail).toBe(`telegram: not connected: ${row?.last_error}`);
    expect(degraded.report.components.platforms.next).toMatch(/platforms\.telegram in config\.yaml/);
    console.log(`status in an outage: ${degraded.report.components.platforms.detail}`);
    const human = await tenaxAsync(home, ["status"]);
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(/platforms\s+degraded\s+telegram: not connected/);

    // Lifted: the gateway polls again and is connected.
    await tg.liftOutage();
    const back = await statusUntil(
      home,
      "telegram connected again",
      (r) => r.components.platforms.status === "ok",
    );
    expect(back.code).toBe(0);

    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    const down = await status(home);
    expect(down.code).toBe(2);
    expect(down.report.components.platforms.status).toBe("down");
    expect(down.report.components.platforms.detail).toBe("telegram: not connected, as no gateway runs");
    expect(down.report.components.platforms.next).toMatch(/^tenax up starts the gateway/);
  });
});
