import { describe, expect, it } from "vitest";
import type { MessageView } from "../store/rows.js";
import { transcriptView } from "./transcript-view.js";

let seq = 0;
function message(over: Partial<MessageView>): MessageView {
  seq++;
  return {
    id: seq,
    uid: `m_${seq}`,
    session_id: "s_1",
    seq,
    role: "assistant",
    content: null,
    content_kind: "text",
    tool_calls: null,
    tool_call_id: null,
    name: null,
    turn_id: "t_1",
    created_at: 1,
    warnings: [],
    ...over,
  };
}
// The agent stores its calls flat; the gateway's model mode in the OpenAI wire format.
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const wireCall = (id: string, name: string, args: unknown) => ({
  id,
  type: "function",
  function: { name, arguments: JSON.stringify(args) },
});

describe("transcriptView", () => {
  it("joins each tool result to its call (either stored shape), in a few words; a call never answered is listed", () => {
    const messages = [
      message({ role: "user", content: "go" }),
      message({
        tool_calls: [
          call("c1", "terminal", { command: "make" }),
          wireCall("c2", "terminal", { command: "make test" }),
        ],
      }),
      message({
        role: "tool",
        name: "terminal",
        tool_call_id: "c1",
        content: JSON.stringify({ exit_code: 2, stdout: "", stderr: "make: *** no rule\n" }),
      }),
      // A result whose call is not in the transcript (compressed away): still a line.
      message({
        role: "tool",
        name: "read_file",
        tool_call_id: "gone",
        content: '{"error":"read_file: denied"}',
      }),
      // A call that is not an object at all.
      message({ tool_calls: ["garbage"] }),
    ];
    const view = transcriptView(messages);
    expect(view[0]).toEqual(messages[0]);
    expect(view[1]?.unanswered).toEqual([
      { id: "c2", name: "terminal", target: "make test", arguments: '{"command":"make test"}' },
    ]);
    expect(view[2]?.tool).toEqual({
      name: "terminal",
      target: "make",
      arguments: '{"command":"make"}',
      ok: false,
      summary: "exit 2: make: *** no rule",
    });
    expect(view[3]?.tool).toEqual({
      name: "read_file",
      target: "",
      arguments: null,
      ok: false,
      summary: "read_file: denied",
    });
    expect(view[4]?.unanswered).toEqual([{ id: null, name: "tool", target: "", arguments: "{}" }]);
  });
});
