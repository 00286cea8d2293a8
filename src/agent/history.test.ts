// What the model is sent from the durable transcript: markers never, a compaction's note in place
// of the middle, an answer for a tool call left without one, a note for an unanswered question.
import { describe, expect, it } from "vitest";
import type { MessageView } from "../store/rows.js";
import { buildHistory, MISSING_RESULT, RESUME_NAME, UNANSWERED_NOTE } from "./history.js";

let seq = 0;
function m(role: string, content: string | null, extra: Partial<MessageView> = {}): MessageView {
  seq++;
  return {
    id: seq,
    uid: `m${seq}`,
    session_id: "s",
    seq,
    role,
    content,
    content_kind: "text",
    tool_calls: null,
    tool_call_id: null,
    name: null,
    turn_id: null,
    created_at: seq,
    warnings: [],
    ...extra,
  };
}

describe("buildHistory", () => {
  it("puts the system prompt first and never sends markers", () => {
    seq = 0;
    const history = buildHistory(
      [m("user", "hi"), m("assistant", "hello"), m("marker", "compressed 3 messages")],
      {
        system: "be brief",
      },
    );
    expect(history).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ]);
  });

  it("reads a session's tool calls in either stored shape: the agent's own and the OpenAI wire format", () => {
    seq = 0;
    // A session begun through the gateway's model mode (wire format), continued as an agent turn.
    const history = buildHistory(
      [
        m("user", "list"),
        m("assistant", null, {
          tool_calls: [{ id: "w1", type: "function", function: { name: "look", arguments: '{"at":"."}' } }],
        }),
        m("tool", "a b", { tool_call_id: "w1" }),
        m("assistant", null, { tool_calls: [{ id: "a1", name: "terminal", arguments: '{"command":"ls"}' }] }),
        m("tool", "x", { tool_call_id: "a1" }),
      ],
      { system: "s" },
    );
    expect(history.slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "w1", name: "look", arguments: '{"at":"."}' }] },
      { role: "tool", content: "a b", tool_call_id: "w1" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a1", name: "terminal", arguments: '{"command":"ls"}' }],
      },
      { role: "tool", content: "x", tool_call_id: "a1" },
    ]);
  });

  it("answers a tool call whose result was never stored, so providers accept the request", () => {
    seq = 0;
    const call = { id: "c1", name: "terminal", arguments: '{"command":"make"}' };
    const history = buildHistory([
      m("user", "build it"),
      m("assistant", null, { tool_calls: [call] }),
      m("user", "well?"),
    ]);
    expect(history).toEqual([
      { role: "user", content: "build it" },
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", content: MISSING_RESULT, tool_call_id: "c1" },
      { role: "user", content: "well?" },
    ]);
  });

  it("tells the model a question went unanswered when its turn was interrupted", () => {
    seq = 0;
    const history = buildHistory([
      m("user", "tell me a story"),
      m("marker", "turn interrupted: stopped by the user; nothing of it runs any more"),
      m("user", "are you there?"),
    ]);
    expect(history).toEqual([
      { role: "user", content: "tell me a story" },
      { role: "assistant", content: UNANSWERED_NOTE },
      { role: "user", content: "are you there?" },
    ]);
  });

  it("does not call a resumed turn's question unanswered, but does once the turn stopped for good", () => {
    seq = 0;
    const crash = "turn interrupted: the process running it stopped (last heartbeat unknown)";
    const t = { turn_id: "t1" };
    const resumed = [
      m("user", "tell me a story", t),
      m("marker", crash, t),
      m("user", "[resume note]", { ...t, name: RESUME_NAME }),
    ];
    expect(buildHistory(resumed)).toEqual([{ role: "user", content: "tell me a story\n\n[resume note]" }]);
    // Interrupted again after the last resume, and suspended: the question is unanswered after all.
    const suspended = [
      ...resumed,
      m("marker", crash, t),
      m("marker", "turn suspended: interrupted 3 times", t),
      m("user", "are you there?"),
    ];
    expect(buildHistory(suspended)).toEqual([
      { role: "user", content: "tell me a story\n\n[resume note]" },
      { role: "assistant", content: UNANSWERED_NOTE },
      { role: "user", content: "are you there?" },
    ]);
  });

  it("replaces a compacted middle with its note and keeps head and tail", () => {
    seq = 0;
    const transcript = [
      m("user", "q1"),
      m("assistant", "a1"),
      m("user", "q2"),
      m("assistant", "a2"),
      m("user", "q3"),
    ];
    const history = buildHistory(transcript, {
      compaction: {
        head_until_seq: 2,
        middle_until_seq: 4,
        summary: "q2 was about x",
        messages: 2,
        created_at: 0,
      },
    });
    expect(history.map((h) => h.content)).toEqual([
      "q1",
      "a1",
      expect.stringContaining("summary of 2 earlier messages"),
      // The note and the next question are one user message: two in a row would be refused.
    ]);
    expect(history[2]?.content).toContain("q2 was about x");
    expect(history[2]?.content).toContain("q3");
  });
});
