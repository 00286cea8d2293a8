// Real headless Chromium for the page tests: Debian's /usr/bin/chromium driven by playwright-core
// (which never downloads a browser), with a fresh profile folder per launch; closed after each test.
import { existsSync } from "node:fs";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterEach } from "vitest";
import { tempDir } from "./tmp.js";

export const CHROMIUM = process.env.TENAX_CHROMIUM ?? "/usr/bin/chromium";

const open: BrowserContext[] = [];

afterEach(async () => {
  for (const context of open.splice(0)) await context.close().catch(() => undefined);
});

export function requireChromium(): void {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`,
    );
}

/** A new headless Chromium with one page; `args` are extra command-line switches. */
export async function openPage(viewport = { width: 1400, height: 900 }, args: string[] = []): Promise<Page> {
  const context = await chromium.launchPersistentContext(tempDir("tenax-chromium-"), {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
  open.push(context);
  return context.pages()[0] ?? (await context.newPage());
}
