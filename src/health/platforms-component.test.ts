import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import type { OutboxBacklog } from "../outbox/backlog.js";
import { type PlatformLive, platformsComponent } from "./platforms-component.js";

const NOW = Date.parse("2026-12-03T06:00:00Z");
const telegram = {
  platforms: {
    telegram: {
      token: "1:x",
      api_root: "http://127.0.0.1:1",
      allowed_users: [1],
      mode: "polling" as const,
      poll_timeout: 30,
    },
  },
};
const backlog = (b: Partial<OutboxBacklog> = {}): Record<string, OutboxBacklog> => ({
  telegram: {
    pending: 0,
    given_up: 0,
    oldest_pending_at: null,
    oldest_pending_age_ms: null,
    last_error: null,
    ...b,
  },
});
const live = (l: Partial<PlatformLive> = {}): Record<string, PlatformLive> => ({
  telegram: {
    mode: "polling",
    connected: true,
    last_ok_at: NOW,
    last_update_at: NOW - 3_000,
    last_error: null,
    last_error_at: null,
    ...l,
  },
});

describe("platformsComponent", () => {
  const paths = tempProfile();

  it("none configured is ok and says so; a connected one is ok with its last update", () => {
    expect(platformsComponent(paths, { platforms: {} }, {}, null, NOW)).toMatchObject({
      status: "ok",
      detail: "no chat platforms configured",
      platforms: [],
    });
    const ok = platformsComponent(paths, telegram, backlog(), live(), NOW);
    expect(ok).toMatchObject({ status: "ok", next: null });
    expect(ok.detail).toBe("telegram: connected (polling), last update 3 s ago, nothing waiting");
  });

  it("not connected, a message given up, or one waiting past five minutes is degraded, each said", () => {
    const down = platformsComponent(
      paths,
      telegram,
      backlog({
        pending: 2,
        oldest_pending_age_ms: 6 * 60_000,
        given_up: 1,
        last_error: "Telegram sendMessage: 502 Bad Gateway",
      }),
      live({ connected: false, last_error: "polling: connect ECONNREFUSED" }),
      NOW,
    );
    expect(down.status).toBe("degraded");
    expect(down.detail).toBe(
      "telegram: not connected: polling: connect ECONNREFUSED; telegram: 1 message(s) given up (last error: Telegram sendMessage: 502 Bad Gateway); telegram: 2 message(s) waiting, the oldest for 6 min 0 s",
    );
    expect(down.next).toContain("check platforms.telegram in config.yaml");
    expect(down.platforms[0]).toMatchObject({ connected: false, pending: 2, given_up: 1 });
  });

  it("with no gateway running it is down, and says how to start one", () => {
    const c = platformsComponent(
      paths,
      telegram,
      backlog({ pending: 3, oldest_pending_age_ms: 1000 }),
      null,
      NOW,
      true,
    );
    expect(c.status).toBe("down");
    expect(c.detail).toBe("telegram: not connected, as no gateway runs; 3 message(s) wait to be sent");
    expect(c.next).toMatch(/tenax up/);
    // Outside the gateway, with one running that did not say: the store's backlog, connection unknown.
    const outside = platformsComponent(paths, telegram, backlog(), null, NOW);
    expect(outside).toMatchObject({ status: "ok", platforms: [{ connected: null }] });
  });
});
