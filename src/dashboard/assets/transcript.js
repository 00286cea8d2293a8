// A session on the page: its transcript, each tool call a line (the tool, what it worked on, how it
// went, as the dashboard server summarized it) with its arguments and whole output folded below,
// and the mark of a session whose last turn did not finish. All text goes in as text nodes.
import { el, when } from "/dom.js";

/**
 * What became of a session's last turn, in words, when it did not finish its work; else null.
 * `max`: the most characters of its error shown (the list is short, the transcript has room).
 */
export function turnMark(lastTurn, max = 300) {
  if (!lastTurn) return null;
  const n = lastTurn.interrupt_count;
  const words = {
    failed: "last turn failed",
    interrupted: "last turn interrupted",
    suspended: `last turn suspended after ${n} interruption${n === 1 ? "" : "s"}`,
  }[lastTurn.state];
  if (!words) return null;
  return el(
    "div",
    { class: `turn-mark ${lastTurn.state}`, "data-turn-state": lastTurn.state },
    lastTurn.error ? `${words}: ${cut(lastTurn.error, max)}` : words,
  );
}

const cut = (text, max) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

export function messageNode(m) {
  if (m.tool) return toolNode(m, el("div", { class: "role" }, `tool call · ${when(m.created_at)}`));
  const head = el(
    "div",
    { class: "role" },
    `${m.role}${m.name ? ` (${m.name})` : ""} · ${when(m.created_at)}`,
  );
  const unanswered = (m.unanswered ?? []).map((call) =>
    el(
      "div",
      { class: "step", "data-tool": call.name },
      stepLine(call.name, call.target),
      " → ",
      el("span", { class: "tool-result failed" }, "no result: the turn ended before the tool answered"),
      details([["arguments", call.arguments]]),
    ),
  );
  // A reply that only called tools says nothing itself: its calls are the tool lines below it.
  if ((m.content ?? "") === "" && m.tool_calls?.length && unanswered.length === 0) return null;
  return el(
    "div",
    { class: "message", "data-role": m.role },
    head,
    m.content ? el("pre", { class: "content" }, m.content) : null,
    unanswered,
  );
}

/** A tool result: the call and how it went on one line, the arguments and whole output on click. */
function toolNode(m, head) {
  const t = m.tool;
  return el(
    "div",
    { class: "message", "data-role": "tool", "data-tool": t.name, "data-ok": String(t.ok) },
    head,
    el(
      "div",
      { class: "step" },
      stepLine(t.name, t.target),
      " → ",
      el(
        "span",
        { class: `tool-result ${t.ok ? "ok" : "failed"}` },
        t.ok ? `✓ ${t.summary}` : `✗ failed: ${t.summary}`,
      ),
    ),
    details([
      ["arguments", t.arguments],
      ["output", m.content],
    ]),
  );
}

function stepLine(name, target) {
  return [
    el("span", { class: "tool-name" }, name),
    target ? " " : "",
    target ? el("code", { class: "tool-target" }, target) : "",
  ];
}

/** The full text behind a line, folded: JSON objects a field at a time, multi-line strings as text. */
function details(fields) {
  const parts = [];
  for (const [label, text] of fields) {
    if (text === null || text === undefined) continue;
    parts.push(el("div", { class: "field" }, label), ...readable(text));
  }
  return parts.length ? el("details", {}, el("summary", {}, "details"), parts) : null;
}

function readable(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return [el("pre", { class: "content" }, text)];
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return [el("pre", { class: "content" }, JSON.stringify(value, null, 2))];
  return Object.entries(value).map(([key, v]) =>
    el(
      "pre",
      { class: "content" },
      `${key}: ${typeof v === "string" && v.includes("\n") ? `\n${v}` : JSON.stringify(v, null, 2)}`,
    ),
  );
}
