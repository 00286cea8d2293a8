// Approvals in the chat, through real agent turns whose exec policy holds a command back: the
// approval arrives as a message with Approve / Deny buttons; a press by an allowed user decides it
// on the agent's ApprovalBook (approved: the command runs; denied: it does not), answers the press
// and edits the message; a stranger's press decides nothing. /approve and /deny do the same.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listApprovals } from "../src/agent/approvals/approval-records.js";
import type { SendOp } from "../src/platforms/adapter.js";
import { outboxKey, readOutboxEntry } from "../src/platforms/outbox-records.js";
import { chatSetup } from "./helpers/chat.js";

const terminalCall = (command: string) => ({
  type: "tool_calls" as const,
  calls: [{ name: "terminal", arguments: { command } }],
});

async function asking(exec: Record<string, unknown> = {}) {
  const t = await chatSetup({ tools: { exec: { mode: "ask", ...exec } } });
  const s = await t.service();
  const marker = join(t.project, "made");
  t.sim.script([terminalCall(`touch ${marker}`), { type: "reply", text: "all done" }]);
  await t.platform.receive(t.text("make the file"));
  await t.until(() => t.platform.sends().some((op) => op.buttons !== undefined), "the approval message");
  const asked = t.platform.sends().find((op) => op.buttons !== undefined) as SendOp;
  const [approve, deny] = asked.buttons?.[0] ?? [];
  if (approve === undefined || deny === undefined) throw new Error("no buttons");
  const [record] = await listApprovals(t.store);
  if (record === undefined) throw new Error("no approval record");
  const delivered = await readOutboxEntry(t.store, outboxKey(asked.chat, `apr/${record.approval_id}`));
  return { ...t, s, marker, asked, approve, deny, record, messageId: delivered?.receipt ?? "" };
}

describe("approvals in the chat", () => {
  it("sends the command with two short buttons; a stranger's press decides nothing, an allowed user's Approve runs it", async () => {
    const t = await asking();
    expect(t.asked.text).toContain(`touch ${t.marker}`);
    expect(t.approve).toEqual({ text: "Approve", data: `apr:${t.record.approval_id}:y` });
    expect(t.deny).toEqual({ text: "Deny", data: `apr:${t.record.approval_id}:n` });
    expect(Buffer.byteLength(t.approve.data)).toBeLessThan(64);
    expect(t.messageId).not.toBe("");
    expect(t.record.status).toBe("pending");

    await t.platform.receive(t.press(t.approve.data, t.messageId, { user: "7", chat: "42" }));
    await t.until(() => t.ops("answer").length === 1, "the stranger's press answered");
    expect(t.ops("answer")[0]).toMatchObject({
      text: "Not allowed: this bot answers only its allowed users.",
    });
    expect((await listApprovals(t.store))[0]?.status).toBe("pending");
    expect(existsSync(t.marker)).toBe(false);

    await t.platform.receive(t.press(t.approve.data, t.messageId));
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(true);
    expect((await listApprovals(t.store))[0]).toMatchObject({
      status: "approved",
      decision: "approve",
      decided_by: "telegram user 42 (user42)",
    });
    expect(t.ops("answer")[1]).toMatchObject({ type: "answer", text: "Approved." });
    expect(t.platform.edits()).toEqual([
      expect.objectContaining({
        message_id: t.messageId,
        text: expect.stringContaining("Approved by telegram user 42"),
        buttons: [],
      }),
    ]);
    expect(t.sent("42").at(-1)).toBe("all done");
  });

  it("Deny keeps the command from running, and a second press is told it was decided already", async () => {
    const t = await asking();
    await t.platform.receive(t.press(t.deny.data, t.messageId));
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(false);
    expect((await listApprovals(t.store))[0]).toMatchObject({
      status: "denied",
      decided_by: "telegram user 42 (user42)",
    });
    expect(t.ops("answer").at(-1)).toMatchObject({ text: "Denied." });
    await t.platform.receive(t.press(t.approve.data, t.messageId));
    await t.settle(t.s);
    expect(t.ops("answer").at(-1)).toMatchObject({
      text: `Approval ${t.record.approval_id} is denied already; nothing changed.`,
    });
    expect(existsSync(t.marker)).toBe(false);
    expect(t.sent("42").at(-1)).toBe("all done");
  });

  it("/deny decides the session's only pending approval and edits its message; /approve with none says so", async () => {
    const t = await asking();
    await t.platform.receive(t.text("/deny"));
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(false);
    expect((await listApprovals(t.store))[0]?.status).toBe("denied");
    expect(t.platform.edits()[0]).toMatchObject({ message_id: t.messageId, buttons: [] });
    await t.platform.receive(t.text("/approve"));
    await t.settle(t.s);
    expect(t.sent("42").at(-1)).toBe("No approval is waiting in this session.");
  });

  it("/approve with two waiting names them; /approve ID decides that one; an unknown ID is said to be unknown", async () => {
    const t = await asking();
    // A second record in the same session, as a second held-back call of the turn would open.
    const other = await t.agent.approvals.open({
      sessionId: t.record.session_id,
      turnId: t.record.turn_id,
      toolCallId: "call_other",
      tool: "terminal",
      command: "rm -rf /tmp/nothing-here",
      reason: "it deletes files",
      dangers: [],
      pattern: "",
      requestedBy: "the test",
    });
    // The turn still waits on its approval: wait for the answers, not for the service to be idle.
    const answers = () => t.sent("42").length;
    const before = answers();
    await t.platform.receive(t.text("/approve"));
    await t.until(() => answers() === before + 1, "the list of approvals");
    const listed = t.sent("42").at(-1) ?? "";
    expect(listed).toMatch(/^2 approvals are waiting; name one: \/approve ID/);
    expect(listed).toContain(t.record.approval_id);
    expect(listed).toContain(other.approval_id);
    expect((await listApprovals(t.store)).every((r) => r.status === "pending")).toBe(true);
    await t.platform.receive(t.text("/approve ap_nope"));
    await t.until(() => answers() === before + 2, "the unknown id's answer");
    expect(t.sent("42").at(-1)).toMatch(/^No approval ap_nope is waiting in this session/);
    await t.platform.receive(t.text(`/approve ${t.record.approval_id}`));
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(true);
    expect((await t.agent.approvals.get(t.record.approval_id))?.status).toBe("approved");
    expect((await t.agent.approvals.get(other.approval_id))?.status).toBe("pending");
    expect(t.sent("42")).toContain("all done");
  });

  it("an approval that expires unanswered edits its message: no stale buttons, and the command did not run", async () => {
    const t = await asking({ approval_timeout: 1 });
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(false);
    expect((await t.agent.approvals.get(t.record.approval_id))?.status).toBe("expired");
    expect(t.platform.edits()).toEqual([
      expect.objectContaining({
        message_id: t.messageId,
        text: expect.stringContaining("It is expired: it does not run."),
        buttons: [],
      }),
    ]);
    expect(t.sent("42").at(-1)).toBe("all done");
  });

  it("a press that decides edits the message once, not again when the turn reports the decision", async () => {
    const t = await asking();
    await t.platform.receive(t.press(t.approve.data, t.messageId));
    await t.settle(t.s);
    expect(existsSync(t.marker)).toBe(true);
    expect(t.platform.edits()).toHaveLength(1);
  });
});
