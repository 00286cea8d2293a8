// The dashboard's follower of the gateway's SSE feed: it parses `id:`/`data:` blocks split across
// chunks, keeps the last few, resumes with Last-Event-ID after a drop, and starts afresh once the
// gateway went away (a new gateway process numbers its events from 1 again).
import { describe, expect, it } from "vitest";
import { EventFeed } from "../src/dashboard/event-feed.js";
import { until } from "./helpers/gateway.js";

function sse(chunks: string[]): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

describe("dashboard event feed", () => {
  it("parses split SSE blocks, keeps the newest, and resumes from the last id", async () => {
    const lastIds: Array<string | null> = [];
    const answers = [
      sse([
        ': keep-alive\n\nid: 1\ndata: {"type":"retry","layer":"llm",',
        '"message":"attempt 2"}\n\nid: 2\ndata: {"type":"credential_rotated","message":"key 1 cooling"}\n\n',
        "id: 3\ndata: not json\n\n",
      ]),
      sse(['id: 4\ndata: {"type":"shutdown","at":1700000000000}\n\n']),
    ];
    const feed = new EventFeed({
      url: () => "http://gateway",
      headers: () => ({ authorization: "Bearer k" }),
      keep: 3,
      now: () => 42,
      fetch: async (_url, init) => {
        lastIds.push(new Headers(init?.headers).get("last-event-id"));
        return answers.shift() ?? new Response("gone", { status: 404 });
      },
    });
    feed.want(true);
    await until(() => !feed.following);
    expect(feed.after(0).map((e) => [e.seq, e.id, e.type, e.layer, e.message])).toEqual([
      [1, "1", "retry", "llm", "attempt 2"],
      [2, "2", "credential_rotated", null, "key 1 cooling"],
      [3, "3", "unparsed", null, "not json"],
    ]);
    expect(feed.error).toBe("the gateway closed the event feed");

    feed.want(true);
    await until(() => !feed.following);
    expect(lastIds).toEqual([null, "3"]);
    // Only the newest three are kept; the gateway's own time is used when it sends one.
    expect(feed.after(0).map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(feed.after(3)).toMatchObject([{ type: "shutdown", received_at: 1700000000000 }]);

    // The gateway went away: the next one starts without Last-Event-ID.
    feed.want(false);
    feed.want(true);
    await until(() => !feed.following);
    expect(lastIds).toEqual([null, "3", null]);
    expect(feed.error).toBe("GET /api/events answered 404");
  });
});
