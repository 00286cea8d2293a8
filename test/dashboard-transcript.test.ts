// What the dashboard says of each session, in real headless Chromium: a title for every session
// (its own, else its first question), the sessions whose last turn failed or was interrupted marked
// in words, and each tool call a readable line (the tool, what it worked on, how it went) with its
// arguments and whole output a click away, all as inert text however hostile.
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import {
  FIRST_QUESTION,
  HOSTILE_ARG,
  HOSTILE_OUTPUT,
  LONG_PATH,
  type Seeded,
  seedSessions,
  serveDashboard,
} from "./helpers/seeded-sessions.js";

beforeAll(() => {
  requireChromium();
});

async function open(): Promise<{ page: Page; seeded: Seeded }> {
  const seeded = await seedSessions();
  const { url, login } = await serveDashboard(seeded.paths);
  const page = await openPage();
  await logInBrowser(page, url, login);
  await page.goto(url);
  await page.locator(`#sessions li[data-session="${seeded.tools}"]`).waitFor();
  return { page, seeded };
}

const xss = (page: Page) => page.evaluate(() => (globalThis as { __xss?: number }).__xss);

describe("dashboard sessions and transcripts in Chromium", () => {
  it("every session has a title: its own, else its first question, else a placeholder", async () => {
    const { page, seeded } = await open();
    const item = (id: string) => page.locator(`#sessions li[data-session="${id}"]`);
    // Untitled sessions: the first question on one line, cut at a word; none at all: a placeholder.
    expect(await item(seeded.tools).locator(".title").textContent()).toBe(
      "List the files here, read the notes, and save a summary to…",
    );
    expect(await item(seeded.interrupted).locator(".title").textContent()).toBe("rebuild the search index");
    expect(await item(seeded.empty).locator(".title").textContent()).toBe("cli session (no user message)");
    const titles = await page.locator("#sessions li .title").allTextContents();
    expect(titles).toHaveLength(10);
    for (const title of titles) expect(title.trim()).not.toBe("");
    await item(seeded.tools).click();
    await expect
      .poll(() => page.locator("#transcript-title").textContent())
      .toBe("List the files here, read the notes, and save a summary to…");
    expect(await page.locator("#transcript .message").first().textContent()).toContain(FIRST_QUESTION);
  });

  it("the sessions whose last turn failed or was interrupted say so in words, in the list and the transcript", async () => {
    const { page, seeded } = await open();
    const item = (id: string) => page.locator(`#sessions li[data-session="${id}"]`);
    // The marks are text, not a colour alone.
    expect(await page.locator("#sessions .turn-mark").count()).toBe(2);
    expect(await item(seeded.failed).locator(".turn-mark").textContent()).toBe(
      "last turn failed: rate_limit: the provider refused (429) after 4 attempts",
    );
    expect(await item(seeded.interrupted).locator(".turn-mark").textContent()).toBe(
      "last turn interrupted: stopped by the user",
    );
    expect(await item(seeded.tools).locator(".turn-mark").count()).toBe(0);

    // The transcript's header says both too.
    await item(seeded.failed).click();
    await expect.poll(() => page.locator("#transcript-title").textContent()).toBe("cron: nightly-report");
    await expect
      .poll(() => page.locator("#transcript .turn-mark").textContent())
      .toBe("last turn failed: rate_limit: the provider refused (429) after 4 attempts");
  });

  it("tool calls are readable lines, not JSON; their details are one click away, and all of it is inert text", async () => {
    const { page, seeded } = await open();
    await page.locator(`#sessions li[data-session="${seeded.tools}"]`).click();
    const tools = page.locator('#transcript .message[data-role="tool"]');
    await tools.first().waitFor();
    const lines = (await tools.locator(".step").allTextContents()).map((l) => l.replace(/\s+/g, " ").trim());
    expect(lines).toEqual([
      "terminal ls -la → ✓ 3 lines",
      "read_file notes.md → ✓ 12 lines",
      "write_file out.txt → ✓ wrote 5 bytes (new file)",
      "terminal cat missing.txt → ✗ failed: exit 1: cat: missing.txt: No such file or directory",
      "read_file gone.txt → ✗ failed: read_file: no such file: gone.txt",
      `terminal echo '${HOSTILE_ARG}' → ✓ 1 line`,
      `read_file ${LONG_PATH} → ✓ 1 line`,
    ]);
    expect(await tools.evaluateAll((nodes) => nodes.map((n) => n.getAttribute("data-ok")))).toEqual([
      "true",
      "true",
      "true",
      "false",
      "false",
      "true",
      "true",
    ]);
    // No raw JSON anywhere in it: the calls' own message is not shown, the details read field by field.
    const text = (await page.locator("#transcript").textContent()) ?? "";
    expect(text).not.toMatch(/"function"|"arguments"|tool_calls|"exit_code"|"stdout"/);
    expect(text).toContain("Three files; the summary is in out.txt.");

    // Folded until clicked; then the arguments and the whole output, a field at a time, still text.
    const hostile = tools.nth(5);
    const details = hostile.locator("details");
    expect(await details.locator("pre").first().isVisible()).toBe(false);
    await hostile.locator("summary").click();
    await expect.poll(() => details.locator("pre").first().isVisible()).toBe(true);
    expect(await details.locator("pre").allTextContents()).toEqual([
      `command: "echo '${HOSTILE_ARG.replace(/"/g, '\\"')}'"`,
      "exit_code: 0",
      "signal: null",
      "timed_out: false",
      `stdout: \n${HOSTILE_OUTPUT}\n`,
      'stderr: ""',
    ]);
    const failing = tools.nth(3);
    await failing.locator("summary").click();
    expect(await failing.locator("details pre").allTextContents()).toContain(
      "stderr: \ncat: missing.txt: No such file or directory\n",
    );
    expect(await page.locator("#transcript img").count()).toBe(0);
    expect(await xss(page)).toBeUndefined();
  });
});
