// The chat service on a real store and real agent turns over the simulator, talking to an
// in-memory platform named "telegram" (test/helpers/fake-platform.ts) through a real outbox.
// Users 42 and 43 are allowed; anyone else is a stranger.

import type { ChatRef, ChatType, InboundEvent, OutboundOp } from "../../src/platforms/adapter.js";
import { textEvent } from "../../src/platforms/adapter.js";
import { type AgentChatHost, agentChatHost } from "../../src/platforms/agent-chat-host.js";
import { ChatService, type ChatServiceOptions } from "../../src/platforms/chat-service.js";
import { chatOutbox } from "../../src/platforms/outbox-channel.js";
import { cleanups, setupAgent } from "./agent.js";
import { FakePlatform } from "./fake-platform.js";
import { chatTestOutbox } from "./platform-outbox.js";
import { waitUntil } from "./tool-context.js";

export const ALLOWED = ["42", "43"];

export async function chatSetup(extra: Record<string, unknown> = {}) {
  const t = await setupAgent(extra);
  const platform = new FakePlatform("telegram");
  const outbox = chatTestOutbox(t.store, platform);
  cleanups.push(async () => outbox.stop());
  const host: AgentChatHost = agentChatHost(t.agent, t.project);
  /** A chat service as the gateway would make one (several on one store: a restart). */
  const service = async (options: Partial<ChatServiceOptions> = {}) => {
    const s = new ChatService({
      store: t.store,
      host,
      adapters: [platform],
      outbox: chatOutbox(outbox),
      allowedUsers: { telegram: ALLOWED },
      typingEveryMs: 50,
      busyRetryMs: 20,
      ...options,
    });
    cleanups.push(async () => {
      s.stop();
      host.interruptAll("the test ended");
      await s.idle();
    });
    await platform.start(s.sink);
    return s;
  };
  let update = 0;
  /** A text (message or command) from a user in a chat, as the adapter would hand it over. */
  const text = (
    body: string,
    options: { user?: string; chat?: string; type?: ChatType; thread?: string | null } = {},
  ): InboundEvent => {
    const user = options.user ?? "42";
    const chat: ChatRef = {
      platform: "telegram",
      chat_id: options.chat ?? user,
      thread_id: options.thread ?? null,
    };
    update++;
    return textEvent(
      {
        update_id: String(update),
        chat,
        chat_type: options.type ?? "private",
        user: { id: user, name: `user${user}` },
        at: Date.now(),
        message_id: `m${update}`,
      },
      body,
    );
  };
  /** A press of a button with `data` on message `messageId`. */
  const press = (
    data: string,
    messageId: string,
    options: { user?: string; chat?: string } = {},
  ): InboundEvent => {
    const user = options.user ?? "42";
    update++;
    return {
      type: "button",
      update_id: String(update),
      chat: { platform: "telegram", chat_id: options.chat ?? user, thread_id: null },
      chat_type: "private",
      user: { id: user, name: `user${user}` },
      at: Date.now(),
      callback_id: `cb${update}`,
      data,
      message_id: messageId,
    };
  };
  /** Everything queued is sent: the outbox delivered what the service committed. */
  const settle = async (s: ChatService) => {
    await s.idle();
    await outbox.kick();
  };
  /** The texts sent (not edits) to a chat, in order. */
  const sent = (chatId?: string) =>
    platform
      .sends()
      .filter((op) => chatId === undefined || op.chat.chat_id === chatId)
      .map((op) => op.text);
  const until = (check: () => boolean, what: string, ms = 10_000) => waitUntil(check, ms, what);
  const ops = (type: OutboundOp["type"]) => platform.performed.filter((op) => op.type === type);
  return { ...t, platform, outbox, host, service, text, press, settle, sent, until, ops };
}
