// The dashboard's MCP tile in real headless Chromium, from a gateway's /health as the gateway makes
// it (mcpComponent over its servers' states, sent as JSON), the gateway's answers standing in for its
// HTTP: a line per server with its state in words and its counts, a server's stderr shown as text
// and never run, and one quiet line when no server is configured, as for the chat platforms.
import { writeFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { McpServerState } from "../src/agent/mcp/mcp-types.js";
import { loadConfig } from "../src/config/load.js";
import type { LookFn } from "../src/health/http-look.js";
import { mcpComponent } from "../src/health/mcp-component.js";
import { tenaxCommand } from "../src/profile/command-hint.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openPage, requireChromium } from "./helpers/browser.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { serveDashboard } from "./helpers/seeded-sessions.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => {
  requireChromium();
});

/** What a stdio server that dies at once writes to stderr: it must reach the page as text. */
const HOSTILE = "<script>alert(1)</script> exited (exit code 3)";

const FOUR_SERVERS = `gateway: { port: 1 }
mcp:
  servers:
    files: { command: npx, args: [-y, files-server] }
    search: { command: node, args: [search.mjs] }
    tickets: { url: "https://mcp.example.invalid/mcp" }
    notes: { command: uvx, args: [notes-mcp] }
`;

function server(paths: ProfilePaths, name: string, state: Partial<McpServerState>): McpServerState {
  return {
    server: name,
    transport: "stdio",
    target: name,
    status: "ready",
    tools: 0,
    since: Date.now() - 60_000,
    pid: null,
    last_error: null,
    next_attempt_at: null,
    failures: 0,
    calls: 0,
    errors: 0,
    timeouts: 0,
    restarts: 0,
    try: tenaxCommand(paths.name, ["mcp", "test", name]),
    ...state,
  };
}

/**
 * The page of a dashboard whose profile's gateway (by its pid file, this process) answers /health
 * with the mcp component it would compute over `servers`, made afresh at each look.
 */
async function dashboardOver(paths: ProfilePaths, servers: McpServerState[]): Promise<Page> {
  writeFileSync(paths.pid, JSON.stringify({ pid: process.pid, host: "127.0.0.1", port: 1 }), { mode: 0o600 });
  const { config } = loadConfig(paths);
  const look: LookFn = async (url) => {
    if (!url.endsWith("/health"))
      return { kind: "answer", status: 200, body: { version: "test", capabilities: [] } };
    const mcp = mcpComponent(paths, config, servers, Date.now());
    const body = JSON.parse(JSON.stringify({ status: mcp.status, components: { mcp } }));
    return { kind: "answer", status: 200, body };
  };
  const { url, login } = await serveDashboard(paths, { probe: { deps: { look } } });
  const page = await openPage();
  await logInBrowser(page, url, login);
  await page.goto(url);
  return page;
}

describe("the dashboard's MCP tile", () => {
  it("shows each server's state in words and its counts, a server's stderr as text", async () => {
    const paths = profileWith(FOUR_SERVERS);
    const page = await dashboardOver(paths, [
      server(paths, "files", {
        target: "npx -y files-server",
        tools: 4,
        pid: 4242,
        calls: 12,
        errors: 1,
      }),
      server(paths, "search", {
        target: "node search.mjs",
        status: "restarting",
        tools: 3,
        last_error: HOSTILE,
        next_attempt_at: Date.now() + 30_000,
        failures: 2,
        calls: 30,
        errors: 4,
        timeouts: 2,
        restarts: 3,
      }),
      server(paths, "tickets", {
        transport: "http",
        target: "https://mcp.example.invalid/mcp",
        status: "failed",
        last_error: "connect ECONNREFUSED 127.0.0.1:443",
        next_attempt_at: Date.now() + 60_000,
        failures: 1,
      }),
      server(paths, "notes", { target: "uvx notes-mcp", status: "starting" }),
    ]);
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const tile = page.locator('.tile[data-layer="mcp"]');
    await tile.locator('.mcp-server[data-server="notes"]').waitFor();
    expect(await tile.getAttribute("data-status")).toBe("degraded");
    expect(await tile.locator(".detail").textContent()).toBe(
      "4 servers: 1 ready, 1 restarting, 1 failed, 1 starting",
    );
    expect(await tile.locator(":scope > .next").textContent()).toBe(
      `next: tenax mcp test search shows what happens when "search" starts; check mcp.servers.search in ${paths.config}. Tenax keeps trying it by itself`,
    );
    const row = (name: string) => tile.locator(`.mcp-server[data-server="${name}"]`);
    const lines = (name: string) =>
      row(name).evaluate((node) => {
        // The row's first line (its own text) and each line under it, as the page shows them.
        const own = [...node.childNodes]
          .filter((n) => n.nodeType === 3 || (n as { className?: string }).className === "who")
          .map((n) => n.textContent)
          .join("");
        const under = [...node.children].filter((n) => n.className !== "who").map((n) => n.textContent);
        return [own, ...under];
      });

    expect(await row("files").getAttribute("data-status")).toBe("ready");
    expect(await lines("files")).toEqual([
      "files ready with 4 tools",
      "12 calls · 1 error · 0 timeouts · 0 restarts",
    ]);

    expect(await row("search").getAttribute("data-status")).toBe("restarting");
    const search = await lines("search");
    expect(search[0]).toBe("search restarting; 3 tools unavailable");
    expect(search[1]).toBe(`last error: ${HOSTILE}`);
    expect(search[2]).toMatch(/^next attempt at \d\d:\d\d:\d\d \(in ([12]\d|30) s\); 2 failures in a row$/);
    expect(search.slice(3)).toEqual([
      "try: tenax mcp test search",
      "30 calls · 4 errors · 2 timeouts · 3 restarts",
    ]);
    expect(await row("search").locator("code").textContent()).toBe("tenax mcp test search");

    expect(await row("tickets").getAttribute("data-status")).toBe("failed");
    const tickets = await lines("tickets");
    expect(tickets[0]).toBe("tickets failed to start (https://mcp.example.invalid/mcp)");
    expect(tickets[1]).toBe("last error: connect ECONNREFUSED 127.0.0.1:443");
    expect(tickets[2]).toMatch(/^next attempt at \d\d:\d\d:\d\d \(in ([3-5]\d|60) s\); 1 failure in a row$/);
    expect(tickets[3]).toBe("try: tenax mcp test tickets");

    expect(await lines("notes")).toEqual([
      "notes starting (uvx notes-mcp)",
      "0 calls · 0 errors · 0 timeouts · 0 restarts",
    ]);

    // The server's stderr is text on the page: no element made of it, nothing run.
    expect(await tile.locator("script").count()).toBe(0);
    expect(await page.locator("script:not([src])").count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it("is one quiet line when no server is configured", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const page = await dashboardOver(paths, []);
    const tile = page.locator('.tile[data-layer="mcp"]');
    await tile.waitFor();
    expect(await tile.getAttribute("data-status")).toBe("ok");
    expect(await tile.locator(".detail").textContent()).toBe("no MCP servers configured");
    expect(await tile.locator(".mcp-server").count()).toBe(0);
    expect(await tile.locator(".next").count()).toBe(0);
  });
});
