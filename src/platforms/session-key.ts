// The one place a chat's session key is made. A private chat is one conversation, whoever the
// platform says sent it; a group chat gives each user a session of their own, so two people in a
// group never share (or interrupt) one turn; a thread (a forum topic) is a conversation apart.
//
//   PLATFORM:CHAT                private chat or channel      telegram:42
//   PLATFORM:CHAT:t=THREAD       a thread of it               telegram:-1001:t=7
//   PLATFORM:CHAT[:t=T]:u=USER   one user of a group chat     telegram:-1001:t=7:u=42
//
// Each part is percent-encoded (encodeURIComponent), so no id can hold a `:` or `/` and the parts
// always read back as they were; the key is plain ASCII, safe as a store record key.
import type { ChatRef, ChatType } from "./adapter.js";

export interface SessionKeyParts extends ChatRef {
  chat_type: ChatType;
  /** Who wrote; used in group chats only. */
  user_id: string;
}

export interface ParsedSessionKey extends ChatRef {
  /** The group user the key is for; null for a private chat's key. */
  user_id: string | null;
}

const enc = (part: string) => encodeURIComponent(part);

function required(name: string, value: string): string {
  if (value.length === 0) throw new RangeError(`a session key needs a ${name}; it was empty`);
  return enc(value);
}

/** The key of a chat (platform and chat, no thread or user): what "once per chat" counts. */
export function chatKey(chat: Pick<ChatRef, "platform" | "chat_id">): string {
  return `${required("platform", chat.platform)}:${required("chat id", chat.chat_id)}`;
}

/** The session key of a message from `user_id` in this chat and thread. */
export function sessionKey(parts: SessionKeyParts): string {
  let key = chatKey(parts);
  if (parts.thread_id !== null) key += `:t=${required("thread id", parts.thread_id)}`;
  if (parts.chat_type === "group") key += `:u=${required("user id", parts.user_id)}`;
  return key;
}

/** A session key read back into its parts; null when it is not one sessionKey made. */
export function parseSessionKey(key: string): ParsedSessionKey | null {
  const parts = key.split(":");
  const [platform, chat, ...rest] = parts;
  if (platform === undefined || chat === undefined || platform === "" || chat === "") return null;
  let thread: string | null = null;
  let user: string | null = null;
  for (const part of rest) {
    const eq = part.indexOf("=");
    const tag = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (eq < 0 || value === "") return null;
    if (tag === "t" && thread === null && user === null) thread = value;
    else if (tag === "u" && user === null) user = value;
    else return null;
  }
  try {
    return {
      platform: decodeURIComponent(platform),
      chat_id: decodeURIComponent(chat),
      thread_id: thread === null ? null : decodeURIComponent(thread),
      user_id: user === null ? null : decodeURIComponent(user),
    };
  } catch {
    // A malformed %-escape: not a key sessionKey made.
    return null;
  }
}
