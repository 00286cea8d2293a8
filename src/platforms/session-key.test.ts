import { describe, expect, it } from "vitest";
import { parseCommand, textEvent } from "./adapter.js";
import { chatKey, parseSessionKey, type SessionKeyParts, sessionKey } from "./session-key.js";

const part = (fields: Partial<SessionKeyParts> = {}): SessionKeyParts => ({
  platform: "telegram",
  chat_id: "-1001",
  thread_id: null,
  chat_type: "group",
  user_id: "42",
  ...fields,
});

describe("sessionKey", () => {
  it("ignores the user in a private chat", () => {
    const a = sessionKey(part({ chat_id: "42", chat_type: "private", user_id: "42" }));
    const b = sessionKey(part({ chat_id: "42", chat_type: "private", user_id: "43" }));
    expect(a).toBe("telegram:42");
    expect(b).toBe(a);
  });

  it("gives each user of a group a session of their own", () => {
    const a = sessionKey(part({ user_id: "42" }));
    const b = sessionKey(part({ user_id: "43" }));
    expect(a).toBe("telegram:-1001:u=42");
    expect(b).toBe("telegram:-1001:u=43");
  });

  it("separates threads, in private chats and in groups", () => {
    expect(sessionKey(part({ thread_id: "7" }))).toBe("telegram:-1001:t=7:u=42");
    expect(sessionKey(part({ thread_id: "8" }))).toBe("telegram:-1001:t=8:u=42");
    expect(sessionKey(part({ chat_type: "private", thread_id: "7" }))).toBe("telegram:-1001:t=7");
    expect(sessionKey(part({ chat_type: "private" }))).not.toBe(
      sessionKey(part({ chat_type: "private", thread_id: "7" })),
    );
  });

  it("is a stable ASCII string whose parts read back whatever they hold", () => {
    const odd = part({ platform: "webhook", chat_id: "room:1/a b", thread_id: "t=1:u=2", user_id: "é:x" });
    const key = sessionKey(odd);
    expect(key).toBe(sessionKey({ ...odd }));
    expect(key).toMatch(/^[\x21-\x7e]+$/);
    expect(key.split(":")).toHaveLength(4);
    expect(parseSessionKey(key)).toEqual({
      platform: "webhook",
      chat_id: "room:1/a b",
      thread_id: "t=1:u=2",
      user_id: "é:x",
    });
    // A chat id that looks like a thread part cannot pass for one.
    expect(sessionKey(part({ chat_id: "1:t=2", chat_type: "private" }))).not.toBe(
      sessionKey(part({ chat_id: "1", thread_id: "2", chat_type: "private" })),
    );
  });

  it("reads back private, thread and group keys, and refuses what it did not make", () => {
    expect(parseSessionKey("telegram:42")).toEqual({
      platform: "telegram",
      chat_id: "42",
      thread_id: null,
      user_id: null,
    });
    expect(parseSessionKey("telegram:-1001:t=7:u=42")).toMatchObject({ thread_id: "7", user_id: "42" });
    for (const bad of [
      "",
      "telegram",
      "telegram:",
      ":42",
      "telegram:42:x=1",
      "telegram:42:u=1:t=2",
      "a:b:u=",
    ])
      expect(parseSessionKey(bad)).toBeNull();
    expect(parseSessionKey("telegram:%E0%A4%A")).toBeNull();
  });

  it("chatKey drops thread and user, and refuses an empty part", () => {
    expect(chatKey(part({ thread_id: "7" }))).toBe("telegram:-1001");
    expect(() => sessionKey(part({ chat_id: "" }))).toThrow(/chat id/);
    expect(() => sessionKey(part({ user_id: "" }))).toThrow(/user id/);
  });
});

describe("parseCommand", () => {
  it("reads the six commands, with arguments and a bot name", () => {
    expect(parseCommand("/stop")).toEqual({ command: "stop", args: "" });
    expect(parseCommand("  /approve apr_1  ")).toEqual({ command: "approve", args: "apr_1" });
    expect(parseCommand("/Status@TenaxBot", "tenaxbot")).toEqual({ command: "status", args: "" });
    expect(parseCommand("/new@OtherBot", "TenaxBot")).toBeNull();
    expect(parseCommand("/help")).toBeNull();
    expect(parseCommand("stop")).toBeNull();
    expect(parseCommand("/stopnow")).toBeNull();
  });

  it("textEvent makes a command or a message", () => {
    const base = {
      update_id: "1",
      chat: { platform: "telegram", chat_id: "42", thread_id: null },
      chat_type: "private" as const,
      user: { id: "42", name: "Ada" },
      at: 0,
      message_id: "9",
    };
    expect(textEvent(base, "/retry")).toMatchObject({ type: "command", command: "retry", args: "" });
    expect(textEvent(base, "hello")).toMatchObject({ type: "message", text: "hello" });
  });
});
