// A platform outbox on a real store file in a temp profile, with an injected clock and its
// events collected: what the outbox tests share.
import type { PlatformEvent } from "../../src/agent/events.js";
import { Outbox, type OutboxOptions } from "../../src/outbox/outbox.js";
import type { ChatRef, SendOp } from "../../src/platforms/adapter.js";
import { type PlatformChannelOptions, platformChannel } from "../../src/platforms/outbox-channel.js";
import { chatEntryInput, type EnqueueInput, readOutboxEntry } from "../../src/platforms/outbox-records.js";
import type { ProfilePaths } from "../../src/profile/paths.js";
import { openStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import type { FakePlatform } from "./fake-platform.js";
import { tempProfile } from "./tmp.js";

export const T0 = Date.parse("2026-12-03T06:00:00Z");
export const chat = (id: string): ChatRef => ({ platform: "fake", chat_id: id, thread_id: null });
export const send = (id: string, text: string, fields: Partial<SendOp> = {}): SendOp => ({
  type: "send",
  chat: chat(id),
  text,
  format: "plain",
  ...fields,
});

export async function setup(paths: ProfilePaths = tempProfile()) {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const clock = { now: T0 };
  const events: PlatformEvent[] = [];
  const outbox = (store: Store, platform: FakePlatform, options: TestOutboxOptions = {}) =>
    chatTestOutbox(store, platform, { now: () => clock.now, onEvent: (e) => events.push(e), ...options });
  return { paths, store, clock, events, outbox };
}

export type TestOutboxOptions = Partial<Omit<OutboxOptions, "store">> & PlatformChannelOptions;

/** An outbox with one platform's channel, taking chat messages as the chat service gives them. */
export function chatTestOutbox(store: Store, platform: FakePlatform, options: TestOutboxOptions = {}) {
  const { now, owners, parallel, ...channel } = options;
  const outbox = new Outbox({
    store,
    ...(now ? { now } : {}),
    ...(owners ? { owners } : {}),
    ...(parallel ? { parallel } : {}),
  }).add(platformChannel(platform, { random: () => 0.5, ...channel }));
  return Object.assign(outbox, {
    enqueueChat: async (input: EnqueueInput) =>
      await outbox.enqueue(chatEntryInput(input, (now ?? Date.now)())),
  });
}

export const state = async (store: Store, key: string) => await readOutboxEntry(store, key);
