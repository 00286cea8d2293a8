// Where compression cuts: the head is the first exchange, the tail is whole recent turns within the
// budget, a long last turn is cut only where its tool calls are answered, and never between a call
// and its result, even where that cut would fit the budget best.
import { describe, expect, it } from "vitest";
import { estimateTokens } from "../llm/tokens.js";
import type { MessageView } from "../store/rows.js";
import { planCompaction, summaryRequest } from "./compression-plan.js";
import { type Compaction, toChatMessage } from "./history.js";

type Spec =
  | { role: "user" | "assistant" | "marker"; text: string }
  | { role: "assistant"; text: string | null; calls: string[] }
  | { role: "tool"; text: string; id: string };

function transcript(specs: Spec[]): MessageView[] {
  return specs.map((spec, i) => ({
    id: i + 1,
    uid: `m${i + 1}`,
    session_id: "s",
    seq: i + 1,
    role: spec.role,
    content: spec.text,
    content_kind: "text",
    tool_calls: "calls" in spec ? spec.calls.map((id) => ({ id, name: "terminal", arguments: "{}" })) : null,
    tool_call_id: "id" in spec ? spec.id : null,
    name: null,
    turn_id: null,
    created_at: 0,
    warnings: [],
  }));
}

/** The estimated size of the messages from seq onwards, as the planner counts it. */
function tokensFrom(messages: MessageView[], seq: number): number {
  return messages
    .filter((m) => m.seq >= seq)
    .map(toChatMessage)
    .reduce((sum, m) => sum + (m ? estimateTokens([m]) : 0), 0);
}

const big = (label: string) => `${label} ${"x".repeat(2_000)}`;

describe("planCompaction", () => {
  it("cuts at a user message even where a cut between a call and its result would fit the budget exactly", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: "first answer" },
      { role: "user", text: "second" },
      { role: "assistant", text: null, calls: ["c1"] },
      { role: "tool", text: big("result"), id: "c1" },
      { role: "assistant", text: "second answer" },
      { role: "marker", text: "a note for people" },
      { role: "user", text: "third" },
      { role: "assistant", text: "third answer" },
    ]);
    // The budget is exactly the size from the tool result on: the tightest fit is a split.
    const plan = planCompaction(messages, null, tokensFrom(messages, 5));
    expect(plan).toMatchObject({ head_until_seq: 2, first_seq: 3, tail_from_seq: 8, messages: 4 });
    expect(plan?.middle_until_seq).toBe(6);
    expect(plan?.fresh.map((m) => m.seq)).toEqual([3, 4, 5, 6]);
  });

  it("cuts a last turn larger than the budget at an assistant message whose calls are answered", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: "first answer" },
      { role: "user", text: "do the long job" },
      { role: "assistant", text: "step 1", calls: ["a"] },
      { role: "tool", text: big("out a"), id: "a" },
      { role: "assistant", text: "step 2", calls: ["b", "c"] },
      { role: "tool", text: big("out b"), id: "b" },
      { role: "tool", text: big("out c"), id: "c" },
      { role: "assistant", text: "done" },
    ]);
    // Fits from the second result of step 2 on, but that would split step 2 from it.
    const plan = planCompaction(messages, null, tokensFrom(messages, 8));
    expect(plan?.tail_from_seq).toBe(9);
    // With room for step 2 whole, the cut moves before it.
    expect(planCompaction(messages, null, tokensFrom(messages, 6))?.tail_from_seq).toBe(6);
  });

  it("never cuts at a user message that sits between a call and its result", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: "first answer" },
      { role: "user", text: "second" },
      { role: "assistant", text: null, calls: ["late"] },
      { role: "user", text: "typed while the tool ran" },
      { role: "tool", text: big("late result"), id: "late" },
      { role: "assistant", text: "answer" },
    ]);
    const plan = planCompaction(messages, null, tokensFrom(messages, 5));
    expect(plan?.tail_from_seq).toBe(7);
  });

  it("has nothing to compress with only the first exchange and the recent turn", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: big("first answer") },
      { role: "user", text: big("second") },
    ]);
    expect(planCompaction(messages, null, 10)).toBeNull();
    expect(planCompaction(transcript([{ role: "user", text: "only" }]), null, 10)).toBeNull();
  });

  it("extends an earlier compaction: same head, the earlier middle counted, only new messages fresh", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: "first answer" },
      { role: "user", text: "second" },
      { role: "assistant", text: "second answer" },
      { role: "user", text: big("third") },
      { role: "assistant", text: "third answer" },
      { role: "user", text: "fourth" },
      { role: "assistant", text: "fourth answer" },
    ]);
    const previous: Compaction = {
      head_until_seq: 2,
      middle_until_seq: 4,
      summary: "earlier: a second question",
      messages: 2,
      created_at: 0,
    };
    const plan = planCompaction(messages, previous, tokensFrom(messages, 7));
    expect(plan).toMatchObject({ head_until_seq: 2, middle_until_seq: 6, messages: 4, first_seq: 3 });
    expect(plan?.fresh.map((m) => m.seq)).toEqual([5, 6]);
    const request = summaryRequest(plan ?? expect.unreachable(), 500);
    const prompt = request.messages.map((m) => m.content).join("\n");
    expect(prompt).toContain("earlier: a second question");
    expect(prompt).toContain("third answer");
    expect(prompt).not.toContain("second answer");
    expect(request.max_output_tokens).toBe(500);
    // Nothing new after the earlier middle but the tail: nothing to do.
    expect(planCompaction(messages.slice(0, 5), previous, 10_000)).toBeNull();
  });

  it("shortens a huge tool output for the summarizer, keeping its start and end", () => {
    const messages = transcript([
      { role: "user", text: "first" },
      { role: "assistant", text: "first answer" },
      { role: "user", text: "second" },
      { role: "assistant", text: null, calls: ["c"] },
      { role: "tool", text: `START${"y".repeat(50_000)}END`, id: "c" },
      { role: "user", text: "third" },
    ]);
    const plan = planCompaction(messages, null, 100);
    const prompt = summaryRequest(plan ?? expect.unreachable(), 500).messages[1]?.content ?? "";
    expect(prompt).toContain("[result of terminal] START");
    expect(prompt).toContain("END");
    expect(prompt).toContain("characters left out");
    expect(prompt.length).toBeLessThan(10_000);
  });
});
