// What a terminal can take, and colors for it. Hand-written rather than `util.styleText`: that
// needs Node 20.12 (the package allows 20.10) and does not decide on its own whether a stream
// should get colors on Node 20; the decision is the part that matters, and it is a few lines.

/** What status output may use on a stream: redrawing in place, and colors. */
export interface TerminalCaps {
  /** A terminal that understands cursor control: a live line may be redrawn in place. */
  live: boolean;
  /** Colors too: a live terminal, and NO_COLOR unset or empty (https://no-color.org). */
  color: boolean;
}

export function terminalCaps(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): TerminalCaps {
  const live = stream.isTTY === true && env.TERM !== "dumb";
  return { live, color: live && (env.NO_COLOR ?? "") === "" };
}

export interface Paint {
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

const sgr =
  (open: number, close: number) =>
  (text: string): string =>
    `\x1b[${open}m${text}\x1b[${close}m`;

const COLORS: Paint = {
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  dim: sgr(2, 22),
  bold: sgr(1, 22),
};

const plain = (text: string): string => text;
const PLAIN: Paint = { red: plain, green: plain, yellow: plain, cyan: plain, dim: plain, bold: plain };

export function paint(color: boolean): Paint {
  return color ? COLORS : PLAIN;
}

/** Up `n` lines, to the start of that line, and erase from there to the end of the screen. */
export function eraseUp(n: number): string {
  return `${n > 0 ? `\x1b[${n}A` : ""}\r\x1b[0J`;
}

/** Cut `text` to `width` characters (the caller paints after cutting, so no escape is split). */
export function cut(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  return `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
}
