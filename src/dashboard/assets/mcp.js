// The MCP servers on the page: a line per server the gateway runs, its state in words (ready with its
// tools, starting, restarting with its last error and next attempt, failed to start with the command
// that shows why) and its calls, errors, timeouts and restarts. All text goes in as text nodes: a
// last error is the server's own stderr, and its name and command come from config.yaml.
import { clock, el } from "/dom.js";

/** A server's colour, as the mcp component counts it: a first start is no fault, a server down is. */
const LEVELS = {
  ready: "ok",
  starting: "unknown",
  stopped: "unknown",
  restarting: "degraded",
  failed: "degraded",
};

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const number = (n) => (Number.isFinite(n) ? n : 0);
/** A server's stderr may run long: the tile shows its start, the tooltip all of it. */
const cut = (text, max) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** The servers the gateway reported; none when no gateway answered or none is configured. */
function serversOf(c) {
  return Array.isArray(c.servers) ? c.servers : [];
}

/**
 * The tile's line: how many servers are in each state, as each has its own line below. Without
 * servers (none configured, or no gateway runs them), the component's own words.
 */
export function mcpSummary(c) {
  const servers = serversOf(c);
  if (servers.length === 0) return c.detail;
  const by = new Map();
  for (const s of servers) by.set(s.status, (by.get(s.status) ?? 0) + 1);
  const states = [...by].map(([status, n]) => `${n} ${status}`).join(", ");
  return `${plural(servers.length, "server")}: ${states}`;
}

/** A line per server, `now` the page's clock (the dashboard and the gateway share the machine's). */
export function mcpLines(c, now = Date.now()) {
  return serversOf(c).map((s) => serverLine(s, now));
}

function serverLine(s, now) {
  const down = s.status === "restarting" || s.status === "failed";
  return el(
    "div",
    {
      class: `mcp-server ${LEVELS[s.status] ?? "unknown"}`,
      "data-server": s.server,
      "data-status": s.status,
    },
    el("span", { class: "who" }, s.server),
    ` ${said(s)}`,
    down && s.last_error
      ? el(
          "div",
          { class: "last-error", title: s.last_error },
          `last error: ${cut(String(s.last_error), 300)}`,
        )
      : null,
    down ? el("div", { class: "next-attempt" }, nextAttempt(s, now)) : null,
    down && s.try ? el("div", { class: "next" }, "try: ", el("code", {}, s.try)) : null,
    el(
      "div",
      { class: "counts" },
      [
        plural(number(s.calls), "call"),
        plural(number(s.errors), "error"),
        plural(number(s.timeouts), "timeout"),
        plural(number(s.restarts), "restart"),
      ].join(" · "),
    ),
  );
}

/** The server's state as a sentence after its name; a down server's tools answer "unavailable". */
function said(s) {
  const tools = plural(number(s.tools), "tool");
  const unavailable = number(s.tools) > 0 ? `; ${tools} unavailable` : "";
  switch (s.status) {
    case "ready":
      return `ready with ${tools}`;
    case "starting":
      return `starting (${s.target})`;
    case "restarting":
      return `restarting${unavailable}`;
    case "failed":
      return `failed to start (${s.target})${unavailable}`;
    case "stopped":
      return "stopped";
    default:
      return String(s.status);
  }
}

/** When it is tried again; during the attempt itself there is no next one yet. */
function nextAttempt(s, now) {
  const tried = s.failures > 0 ? `; ${plural(s.failures, "failure")} in a row` : "";
  if (s.next_attempt_at === null || s.next_attempt_at === undefined) return `starting it again now${tried}`;
  const left = Math.max(0, Math.ceil((s.next_attempt_at - now) / 1000));
  return `next attempt at ${clock(s.next_attempt_at)} (in ${left} s)${tried}`;
}
