// The dashboard's logins on the page: each live one (when it started, its last use, the client it
// came from), which one is this device, and a button that logs this device out. All text goes in
// as text nodes: a client's name is its own User-Agent.
import { $, el, when } from "/dom.js";

/** Draw GET /api/logins' answer into the logins panel. */
export function renderLogins(body) {
  const section = $("logins-panel");
  if (body.mode === "none") {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  $("logins-note").textContent = `${body.mode} mode: ${body.logins.length} live`;
  $("logins")
    .querySelector("tbody")
    .replaceChildren(
      ...body.logins.map((l) =>
        el(
          "tr",
          { "data-login": l.login_id },
          el("td", {}, l.login_id === body.current ? `${l.made_by} (this device)` : l.made_by),
          el("td", {}, when(l.created_at)),
          el("td", {}, when(l.last_used_at)),
          el("td", { title: l.client ?? "" }, (l.client ?? "?").slice(0, 40)),
        ),
      ),
    );
}
