// One lane per session key: the chat's messages waiting for their turn, in arrival order, and the
// one running now. In memory only: the inbox holds what waits durably, and a restart rebuilds the
// lanes from it (ChatService.recover).
import type { TurnResult } from "../agent/turn.js";
import type { ChatRef } from "./adapter.js";
import type { InboxEntry } from "./inbox.js";

export interface LaneItem {
  entry: InboxEntry;
  /** A turn the gateway resumed after a crash, answering this entry: waited for, not started. */
  resumed?: Promise<TurnResult>;
}

export interface Running {
  entry: InboxEntry;
  sessionId: string;
  startedAt: number;
}

export interface Lane {
  /** The session key. */
  key: string;
  platform: string;
  chatKey: string;
  chat: ChatRef;
  queue: LaneItem[];
  current: Running | null;
  /** The pump working the queue, while it runs. */
  pumping: Promise<void> | null;
}

export function newLane(entry: InboxEntry): Lane {
  return {
    key: entry.session_key,
    platform: entry.platform,
    chatKey: entry.chat_key,
    chat: entry.event.chat,
    queue: [],
    current: null,
    pumping: null,
  };
}

/** Add an item in arrival order (writes may finish out of order; `order` was set on arrival). */
export function enqueue(lane: Lane, item: LaneItem): void {
  if (lane.queue.some((i) => i.entry.key === item.entry.key)) return;
  if (lane.current?.entry.key === item.entry.key) return;
  const at = lane.queue.findIndex((i) => i.entry.order > item.entry.order);
  if (at < 0) lane.queue.push(item);
  else lane.queue.splice(at, 0, item);
}
