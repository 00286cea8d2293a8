// platforms in config.yaml through the real loader: what a Telegram section defaults to, and the
// errors a wrong one gets (the file's line, the key, what was expected, never the token itself).
import { describe, expect, it } from "vitest";
import { profileWith, thrown } from "../../test/helpers/temp-home.js";
import { loadConfig } from "./load.js";

const TOKEN = "123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bQ";

describe("platforms config", () => {
  it("a Telegram section with its token only: polling the public Bot API, nobody allowed yet", () => {
    const { config } = loadConfig(profileWith(`platforms:\n  telegram:\n    token: "${TOKEN}"\n`), {});
    expect(config.platforms.telegram).toEqual({
      token: TOKEN,
      api_root: "https://api.telegram.org",
      allowed_users: [],
      mode: "polling",
      poll_timeout: 30,
    });
    expect(config.platforms.webhook).toBeUndefined();
  });

  it("a token that is not a bot token is an error on its line that never prints it", () => {
    const paths = profileWith(`platforms:\n  telegram:\n    token: "not-a-token-secret"\n`);
    const error = thrown(() => loadConfig(paths, {}));
    expect(error.message).toContain(
      `${paths.config}:3: platforms.telegram.token: expected a bot token of the form`,
    );
    expect(error.message).toContain("@BotFather");
    expect(error.message).not.toContain("not-a-token-secret");
  });

  it("user ids are numbers; webhook mode needs its URL; an unknown key is named", () => {
    const ids = thrown(() =>
      loadConfig(
        profileWith(`platforms:\n  telegram: { token: "${TOKEN}", allowed_users: ["@alice"] }\n`),
        {},
      ),
    );
    expect(ids.message).toContain(
      "platforms.telegram.allowed_users[0]: expected a Telegram user id (a number)",
    );
    const hook = thrown(() =>
      loadConfig(profileWith(`platforms:\n  telegram: { token: "${TOKEN}", mode: webhook }\n`), {}),
    );
    expect(hook.message).toContain("platforms.telegram.webhook_url: mode webhook needs webhook_url");
    expect(hook.message).toContain("platforms.telegram.webhook_secret: mode webhook needs webhook_secret");
    const withSecret = loadConfig(
      profileWith(
        `platforms:\n  telegram: { token: "${TOKEN}", mode: webhook, webhook_url: "https://bot.example.com/api/platforms/telegram/webhook", webhook_secret: "abc_123" }\n`,
      ),
      {},
    );
    expect(withSecret.config.platforms.telegram?.webhook_secret).toBe("abc_123");
    const unknown = thrown(() =>
      loadConfig(profileWith(`platforms:\n  telegarm: { token: "${TOKEN}" }\n`), {}),
    );
    expect(unknown.message).toContain("telegarm");
    expect(unknown.message).not.toContain(TOKEN);
  });
});
