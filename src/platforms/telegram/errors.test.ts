// grammY's errors as the Bot API produces them: a real grammY Api against a real HTTP server on
// 127.0.0.1 that answers each call with Telegram's error shape, or closes the connection.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Api } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { classifyTelegramError } from "./errors.js";

let server: Server | null = null;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function apiAnswering(answer: { status: number; body: unknown } | "hang-up"): Promise<Api> {
  server = createServer((req, res) => {
    req.resume();
    if (answer === "hang-up") {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return new Api("123:ABCDEFGHIJKLMNOPQRSTUVWXYZ", { apiRoot: `http://127.0.0.1:${port}` });
}

async function failureOf(answer: Parameters<typeof apiAnswering>[0]) {
  const api = await apiAnswering(answer);
  const error = await api.sendMessage(1, "hi").then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).not.toBeNull();
  return classifyTelegramError(error);
}

const telegramError = (error_code: number, description: string, parameters?: object) => ({
  status: error_code,
  body: { ok: false, error_code, description, ...(parameters ? { parameters } : {}) },
});

describe("classifyTelegramError", () => {
  it("429 waits exactly retry_after; 5xx and a closed connection are retried", async () => {
    expect(
      await failureOf(telegramError(429, "Too Many Requests: retry after 2", { retry_after: 2 })),
    ).toMatchObject({
      code: "rate_limited",
      retryable: true,
      retryAfterMs: 2000,
    });
    expect(await failureOf(telegramError(502, "Bad Gateway"))).toMatchObject({
      code: "server_error",
      retryable: true,
    });
    const network = await failureOf("hang-up");
    expect(network).toMatchObject({ code: "network", retryable: true, retryAfterMs: null });
    expect(network.message).toMatch(/sendMessage/);
  });

  it("a formatting rejection is resent as plain text; a bad token or a blocked chat is not retried", async () => {
    expect(
      await failureOf(
        telegramError(400, 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0'),
      ),
    ).toMatchObject({ code: "bad_formatting", plainText: true });
    const token = await failureOf(telegramError(401, "Unauthorized"));
    expect(token).toMatchObject({ code: "unauthorized", retryable: false });
    expect(token.message).toContain("bot token");
    expect(await failureOf(telegramError(403, "Forbidden: bot was blocked by the user"))).toMatchObject({
      code: "rejected",
      retryable: false,
    });
  });

  it("a group that became a supergroup names the chat to send to", async () => {
    expect(
      await failureOf(
        telegramError(400, "Bad Request: group chat was upgraded to a supergroup chat", {
          migrate_to_chat_id: -1001234,
        }),
      ),
    ).toMatchObject({ code: "migrated", retryable: true, migrateTo: -1001234 });
  });
});
