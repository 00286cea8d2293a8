// The dashboard page: polls the dashboard server's JSON and redraws. Every piece of text goes in
// through textContent (el() in dom.js), never as HTML: transcripts and error messages are untrusted.
import { $, clock, el, when } from "/dom.js";
import { renderLogins } from "/logins.js";
import { mcpLines, mcpSummary } from "/mcp.js";
import { messageNode, turnMark } from "/transcript.js";

const POLL_MS = 1000;
const state = { profile: "default", selected: null, query: "", eventsAfter: 0, lastEvents: [] };

/** A command for this profile, exactly as it should be typed. */
function command(args) {
  return ["tenax", ...(state.profile === "default" ? [] : ["--profile", state.profile]), ...args].join(" ");
}

async function getJson(path) {
  const res = await fetch(path, { cache: "no-store" });
  // The login ended (revoked, expired, logged out elsewhere): the page itself says why, and how.
  if (res.status === 401) {
    location.assign("/");
    throw new Error("the login ended");
  }
  const body = await res.json();
  return { status: res.status, body };
}

function tile(name, level, detail, next, extra = []) {
  return el(
    "div",
    { class: `tile ${level}`, "data-layer": name, "data-status": level },
    el("span", { class: "state" }, level),
    el("div", { class: "name" }, name),
    el("div", { class: "detail" }, detail),
    next ? el("div", { class: "next" }, `next: ${next}`) : null,
    extra,
  );
}

/** What the probe adds to the gateway's tile: its capabilities and what tenax up says of it. */
function gatewayExtras(gw) {
  const caps = gw.capabilities;
  const extra = [];
  if (caps !== null)
    extra.push(
      el(
        "div",
        { class: "next" },
        caps.served
          ? `capabilities: ${caps.list.join(", ") || "none"}`
          : `GET /api/capabilities not served (HTTP ${caps.http_status})`,
      ),
    );
  if (gw.health?.served) extra.push(el("div", { class: "next" }, `GET /health: ${gw.health.status} overall`));
  if (gw.supervisor) extra.push(el("div", { class: "next" }, supervisorLine(gw.supervisor)));
  return extra;
}

/** The gateway alone, when no report can be made (config.yaml does not load): as the probe sees it. */
function gatewayTile(gw) {
  const extra = gatewayExtras(gw);
  if (gw.reachable === null) return tile("gateway", "degraded", `probing ${gw.url}…`, null, extra);
  if (!gw.reachable) return tile("gateway", "down", gw.error, gw.advice ? gw.advice.next : null, extra);
  return tile("gateway", gw.health?.status ?? "degraded", gw.error ?? `${gw.url} answers`, null, extra);
}

/**
 * The providers layer: the whole (down when no model of the chain answers, degraded when one fails,
 * unknown while the primary was never seen answering) and a line per provider with its last error.
 */
function providersTile(c) {
  const lines = (c.providers ?? []).map((p) =>
    el(
      "div",
      { class: `provider ${p.status}`, "data-provider": p.provider, "data-status": p.status },
      el("span", { class: "state" }, p.status),
      el("span", { class: "who" }, p.provider),
      ` ${p.detail}`,
      p.last_error
        ? el(
            "div",
            { class: "last-error" },
            `last error: ${p.last_error.reason} at ${when(p.last_error.at)} (${p.last_error.source === "probe" ? "the probe" : "a call"})`,
          )
        : null,
      p.next && p.next !== c.next ? el("div", { class: "next" }, `next: ${p.next}`) : null,
    ),
  );
  // Each model's circuit breaker: closed, open (calls skip it) or half_open (one probe goes next).
  const circuits = (c.models ?? []).map((m) =>
    el(
      "div",
      {
        class: `circuit ${m.circuit === "closed" ? "ok" : m.circuit === "open" ? "down" : "degraded"}`,
        "data-model": `${m.provider}/${m.model}`,
        "data-circuit": m.circuit,
      },
      el("span", { class: "state" }, m.circuit),
      el("span", { class: "who" }, `${m.provider}/${m.model}`),
      m.circuit === "closed"
        ? ""
        : ` ${m.failures} failure${m.failures === 1 ? "" : "s"}${m.reason ? ` (${m.reason})` : ""}${
            m.circuit === "open" && m.retry_at ? `; probe at ${when(m.retry_at)}` : ""
          }`,
    ),
  );
  return tile("providers", c.status, c.summary ?? c.detail, c.next, [...lines, ...circuits]);
}

/** What tenax up says of the gateway: its state, restarts and last exit. */
function supervisorLine(sup) {
  const g = sup.gateway;
  const last = g.last_exit
    ? `; last exit: ${g.last_exit.signal ? `killed by ${g.last_exit.signal}` : `code ${g.last_exit.code}`} at ${clock(g.last_exit.at)}`
    : "";
  return `tenax up (pid ${sup.pid}): gateway ${g.state.replace("_", " ")}, ${g.restarts} restart(s)${last}`;
}

const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** The advice as text with its command in <code>, exactly as it must be typed. */
function adviceNodes(advice) {
  // A command is never capitalized: it must read exactly as it is typed.
  const next = advice.next.startsWith(advice.command) ? advice.next : capital(advice.next);
  const at = next.indexOf(advice.command);
  if (at < 0) return [`${next}.`];
  return [
    next.slice(0, at),
    el("code", {}, advice.command),
    `${next.slice(at + advice.command.length)}${next.endsWith(advice.command) ? "" : "."}`,
  ];
}

function renderBanner(gw) {
  const banner = $("banner");
  if (gw.reachable !== false && !gw.advice) {
    banner.hidden = true;
    banner.replaceChildren();
    return;
  }
  const why =
    gw.reachable === false
      ? `gateway unreachable since ${clock(gw.unreachable_since)} — ${gw.error}. `
      : "gateway down. ";
  const advice = gw.advice ?? {
    situation: "not running",
    next: `start it with: ${command(["gateway", "run"])}`,
    command: command(["gateway", "run"]),
  };
  banner.replaceChildren(why, `${capital(advice.situation)}. `, ...adviceNodes(advice));
  banner.dataset.manager = advice.manager ?? "unknown";
  banner.hidden = false;
}

/**
 * Every layer as `tenax status` reports it (the dashboard computes it with the same function from
 * the same look at the gateway): one tile per component, in the model's order, and the overall
 * state the report's. The page adds nothing of its own to a state.
 */
function renderLayers(layers, gw) {
  const pill = $("overall");
  if (!layers.ok) {
    const tiles = [tile("config", "down", layers.error.message, layers.error.hint), gatewayTile(gw)];
    $("layers").replaceChildren(...tiles);
    pill.textContent = "down";
    pill.className = "pill down";
    return;
  }
  const tiles = Object.entries(layers.report.components).map(([name, c]) => {
    if (name === "providers") return providersTile(c);
    if (name === "mcp") return tile(name, c.status, mcpSummary(c), c.next, mcpLines(c));
    return tile(name, c.status, c.detail, c.next, name === "gateway" ? gatewayExtras(gw) : []);
  });
  renderCredentials(layers.report.components.credentials);
  renderInstances(layers.report.components.instances);
  $("layers").replaceChildren(...tiles);
  pill.textContent = layers.report.status;
  pill.className = `pill ${layers.report.status}`;
}

/** The profile's instances, one row each: which process, alive or gone, its heartbeat, what it runs. */
function renderInstances(instances) {
  $("instances-note").textContent = instances?.detail ?? "";
  const rows = (instances?.instances ?? []).map((i) =>
    el(
      "tr",
      { class: i.state === "gone" ? "down" : i.state === "unknown" ? "degraded" : "", "data-instance": i.id },
      el(
        "td",
        {},
        el("div", { class: "fp" }, `${i.id}${i.self ? " (this gateway)" : ""}`),
        el(
          "div",
          { class: "muted" },
          [`${i.host} pid ${i.pid}`, i.started_at === null ? null : `since ${when(i.started_at)}`]
            .filter(Boolean)
            .join(" · "),
        ),
      ),
      el("td", {}, i.state),
      el("td", {}, i.heartbeat_age_ms === null ? "" : `${Math.ceil(i.heartbeat_age_ms / 1000)} s ago`),
      el("td", {}, `${i.turns_running}${i.platforms?.length ? ` · ${i.platforms.join(", ")}` : ""}`),
    ),
  );
  $("instances").tBodies[0].replaceChildren(...rows);
}

function renderCredentials(credentials) {
  const rows = [];
  const now = Date.now();
  for (const p of credentials?.providers ?? []) {
    if (!p.keyed) {
      rows.push(
        el("tr", {}, el("td", {}, p.provider), el("td", { colspan: 4 }, "no key (the server needs none)")),
      );
      continue;
    }
    for (const k of p.keys) {
      const left = k.cooldown_until ? `${Math.max(0, Math.ceil((k.cooldown_until - now) / 1000))} s` : "";
      const st = k.status === "ok" ? "ok" : `${k.status} (${k.reason ?? "?"})`;
      rows.push(
        el(
          "tr",
          { class: k.status === "ok" ? "" : k.status === "disabled" ? "down" : "degraded" },
          el("td", {}, p.provider),
          el("td", {}, k.position + 1),
          el("td", { class: "fp" }, k.fingerprint),
          el("td", {}, st),
          el("td", {}, left),
        ),
      );
    }
  }
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 5 }, "no providers configured")));
  $("credentials").tBodies[0].replaceChildren(...rows);
}

function sessionItem(s, snippet) {
  // A search hit whose session could not be read has no title: its id stands in.
  const title = s.title ?? s.id;
  const item = el(
    "li",
    {
      "data-session": s.id,
      "data-turn-state": s.last_turn?.state ?? null,
      class: s.id === state.selected ? "selected" : null,
    },
    el("div", { class: `title${s.title_source === "placeholder" ? " placeholder" : ""}` }, title),
    el(
      "div",
      { class: "muted" },
      [
        s.title ? s.id : null,
        s.message_count === null ? null : `${s.message_count} message${s.message_count === 1 ? "" : "s"}`,
        when(s.updated_at),
      ]
        .filter(Boolean)
        .join(" · "),
    ),
    turnMark(s.last_turn, 120),
    snippet ? el("div", { class: "snippet" }, snippet) : null,
  );
  item.addEventListener("click", () => openSession(s.id));
  return item;
}

async function refreshSessions() {
  const note = $("sessions-note");
  if (state.query !== "") {
    const { status, body } = await getJson(`/api/search?q=${encodeURIComponent(state.query)}`);
    if (status !== 200) {
      note.textContent = `${body.error.message}${body.error.hint ? ` (${body.error.hint})` : ""}`;
      $("sessions").replaceChildren();
      return;
    }
    const seen = new Set();
    const items = [];
    for (const hit of body.hits) {
      if (seen.has(hit.session_id)) continue;
      seen.add(hit.session_id);
      const session = body.sessions?.[hit.session_id] ?? { id: hit.session_id, title: null };
      items.push(
        sessionItem({ ...session, message_count: null, updated_at: hit.message.created_at }, hit.snippet),
      );
    }
    note.textContent = `${items.length} session(s) match "${state.query}"${body.pending ? `; ${body.pending} message(s) not indexed yet` : ""}`;
    $("sessions").replaceChildren(...items);
    return;
  }
  const { status, body } = await getJson("/api/sessions?limit=100");
  if (status !== 200) {
    note.textContent = `${body.error.message}${body.error.hint ? ` (${body.error.hint})` : ""}`;
    return;
  }
  note.textContent = body.sessions.length === 0 ? "no sessions yet" : `${body.sessions.length} most recent`;
  $("sessions").replaceChildren(...body.sessions.map((s) => sessionItem(s)));
}

async function openSession(id) {
  state.selected = id;
  for (const li of $("sessions").children) li.classList.toggle("selected", li.dataset.session === id);
  const { status, body } = await getJson(`/api/sessions/${encodeURIComponent(id)}`);
  if (status !== 200) {
    $("transcript").replaceChildren(el("p", { class: "down" }, body.error.message));
    return;
  }
  $("transcript-title").textContent = body.session.title;
  const mark = turnMark(body.session.last_turn);
  const messages = body.messages.map(messageNode).filter(Boolean);
  $("transcript").replaceChildren(
    ...(mark ? [mark] : []),
    ...(messages.length ? messages : [el("p", { class: "muted" }, "no messages")]),
  );
}

async function refreshEvents(gw) {
  const { body } = await getJson(`/api/events?after=${state.eventsAfter}`);
  const note = $("events-note");
  if (!body.served) {
    const caps = gw.capabilities;
    note.textContent =
      gw.reachable === false
        ? "the gateway is unreachable; events resume when it is back"
        : caps?.served
          ? "this gateway does not serve live events (not in /api/capabilities)"
          : "the gateway's capabilities are unknown, so live events are off";
  } else note.textContent = body.error ?? (body.following ? "live" : "connecting…");
  if (body.events.length === 0) return;
  state.eventsAfter = body.events[body.events.length - 1].seq;
  state.lastEvents = [...body.events.reverse(), ...state.lastEvents].slice(0, 100);
  $("events").replaceChildren(
    ...state.lastEvents.map((e) =>
      el(
        "li",
        { "data-type": e.type },
        el("span", { class: "muted" }, `${clock(e.received_at)} `),
        el("span", { class: "type" }, e.type),
        e.layer ? ` [${e.layer}]` : "",
        e.message ? ` ${e.message}` : "",
      ),
    ),
  );
}

let ticks = 0;
async function tick() {
  const selfBanner = $("self-banner");
  try {
    // The banner first: it must never wait for the (slower) status report.
    const { body: gw } = await getJson("/api/gateway");
    selfBanner.hidden = true;
    $("gateway-url").textContent =
      `gateway ${gw.url} (from ${gw.source === "pid_file" ? "its pid file" : gw.source === "up" ? "tenax up" : "config.yaml"})`;
    renderBanner(gw);
    const { body: layers } = await getJson("/api/layers");
    renderLayers(layers, gw);
    await refreshEvents(gw);
    if (ticks % 3 === 0 && state.query === "") await refreshSessions();
    if (ticks % 5 === 0) renderLogins((await getJson("/api/logins")).body);
    $("updated").textContent = `updated ${clock(Date.now())}`;
  } catch (error) {
    selfBanner.textContent = `the dashboard server is not answering (${error.message}); is tenax dashboard still running?`;
    selfBanner.hidden = false;
  }
  ticks++;
}

async function start() {
  try {
    const { body } = await getJson("/api/overview");
    state.profile = body.profile;
    $("profile").textContent = `profile ${body.profile} · ${body.store ?? body.state_db}`;
  } catch {
    // tick() shows the server as unreachable.
  }
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.query = $("search").value.trim();
    void refreshSessions();
  });
  $("search-clear").addEventListener("click", () => {
    $("search").value = "";
    state.query = "";
    void refreshSessions();
  });
  // One tick at a time: a slow answer delays the next poll instead of piling requests up.
  const loop = async () => {
    await tick();
    setTimeout(loop, POLL_MS);
  };
  await loop();
}

void start();
