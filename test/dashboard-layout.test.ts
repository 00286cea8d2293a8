// The dashboard's layout in real headless Chromium, as a newcomer first sees it: at 1400 and 1920
// px the sessions, the transcript and the key pools with the events stand side by side under the
// tiles, the transcript on the first screen and the widest of the three; on a phone they stack.
// Never a horizontal scrollbar, even with a transcript holding a path that cannot break.
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { seedSessions, serveDashboard } from "./helpers/seeded-sessions.js";

beforeAll(() => {
  requireChromium();
});

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The dashboard of a seeded profile, with its session that called tools open. */
async function openDashboard(width: number, height: number): Promise<Page> {
  const seeded = await seedSessions();
  const { url, login } = await serveDashboard(seeded.paths);
  const page = await openPage({ width, height });
  await logInBrowser(page, url, login);
  await page.goto(url);
  await page.locator(`#sessions li[data-session="${seeded.tools}"]`).click();
  await page.locator('#transcript .message[data-role="tool"]').first().waitFor();
  await page.locator('.tile[data-layer="store"]').waitFor();
  return page;
}

/**
 * The three columns under the tiles, and the page's scroll width against its own, all read from one
 * layout: the page keeps polling, and a banner or a taller row of tiles that appears between two
 * separate reads moves every column down, so boxes read one at a time could disagree by its height.
 */
async function measure(page: Page) {
  const selectors = {
    sessions: 'main > section[aria-label="sessions"]',
    transcript: 'main > section[aria-label="transcript"]',
    aside: "main > aside",
  };
  const read = await page.evaluate((wanted) => {
    // The page's own document (the test's TypeScript has no DOM types).
    interface Rect {
      x: number;
      y: number;
      width: number;
      height: number;
    }
    const doc = (
      globalThis as unknown as {
        document: {
          documentElement: { scrollWidth: number; clientWidth: number };
          querySelector(s: string): { getBoundingClientRect(): Rect } | null;
        };
      }
    ).document;
    const boxes: Record<string, Rect | null> = {};
    for (const [name, selector] of Object.entries(wanted)) {
      const r = doc.querySelector(selector)?.getBoundingClientRect() ?? null;
      boxes[name] = r === null ? null : { x: r.x, y: r.y, width: r.width, height: r.height };
    }
    const root = doc.documentElement;
    return { boxes, scrollWidth: root.scrollWidth, clientWidth: root.clientWidth };
  }, selectors);
  const box = (name: keyof typeof selectors): Box => {
    const found = read.boxes[name];
    if (found === null || found === undefined || found.width === 0)
      throw new Error(`${selectors[name]} is not shown`);
    return found;
  };
  return {
    sessions: box("sessions"),
    transcript: box("transcript"),
    aside: box("aside"),
    scrollWidth: read.scrollWidth,
    clientWidth: read.clientWidth,
  };
}

const right = (b: Box) => b.x + b.width;
const bottom = (b: Box) => b.y + b.height;

describe("dashboard layout in Chromium", () => {
  it("at 1400 and 1920 px: sessions | transcript | pools and events, side by side, on the first screen", async () => {
    const height = 900;
    const page = await openDashboard(1400, height);
    for (const width of [1400, 1920]) {
      await page.setViewportSize({ width, height });
      const m = await measure(page);
      const at = `at ${width} px`;
      // Side by side, in that order, tops aligned.
      expect(right(m.sessions), `${at}: the sessions end before the transcript`).toBeLessThanOrEqual(
        m.transcript.x,
      );
      expect(right(m.transcript), `${at}: the transcript ends before the pools`).toBeLessThanOrEqual(
        m.aside.x,
      );
      expect(Math.abs(m.sessions.y - m.transcript.y), `${at}: one row`).toBeLessThan(2);
      expect(Math.abs(m.aside.y - m.transcript.y), `${at}: one row`).toBeLessThan(2);
      // The session list is a column, not the page; the transcript is the widest column.
      expect(m.sessions.width, `${at}: the session list's width`).toBeLessThan(width * 0.35);
      expect(m.transcript.width, `${at}: the transcript's width`).toBeGreaterThan(
        Math.max(m.sessions.width, m.aside.width, width * 0.3),
      );
      // The transcript is on the first screen: at least 300 px of it without scrolling.
      expect(m.transcript.y + 300, `${at}: the transcript's top`).toBeLessThan(height);
      expect(right(m.aside), `${at}: the pools' right edge`).toBeLessThanOrEqual(width);
      expect(m.scrollWidth, `${at}: no horizontal scrolling`).toBeLessThanOrEqual(m.clientWidth);
    }
  });

  it("on a phone (400 px): one column, sessions then transcript then the rest, nothing wider than the screen", async () => {
    const width = 400;
    const m = await measure(await openDashboard(width, 800));
    for (const b of [m.sessions, m.transcript, m.aside]) {
      expect(b.x).toBeGreaterThanOrEqual(0);
      expect(right(b)).toBeLessThanOrEqual(width);
      expect(b.width).toBeGreaterThan(width * 0.8);
    }
    expect(m.transcript.y).toBeGreaterThanOrEqual(bottom(m.sessions));
    expect(m.aside.y).toBeGreaterThanOrEqual(bottom(m.transcript));
    expect(m.scrollWidth).toBeLessThanOrEqual(m.clientWidth);
  });
});
