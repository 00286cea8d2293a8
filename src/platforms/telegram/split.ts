// A reply longer than one Telegram message, cut into messages that each fit: at a paragraph break
// if there is one in the second half of the room, else at a line break, else at a space, else
// hard, never between the two halves of a surrogate pair. A fenced code block cut in two is
// closed at the end of the first part and opened again at the start of the next, so each part
// reads (and renders) on its own.

/** Telegram's limit on a message's text, in UTF-16 code units (what JavaScript's length counts). */
export const TELEGRAM_TEXT_LIMIT = 4096;

const FENCE = "```";

export function splitMessage(text: string, limit = TELEGRAM_TEXT_LIMIT): string[] {
  if (limit < 64) throw new RangeError(`a message limit of ${limit} leaves no room to split in`);
  const parts: string[] = [];
  let rest = text;
  let reopen = "";
  while (reopen.length + rest.length > limit) {
    // Room for the reopened fence before and a closing fence after.
    const room = limit - reopen.length - (FENCE.length + 1);
    const cut = cutAt(rest, room);
    const head = reopen + rest.slice(0, cut);
    rest = rest.slice(cut).replace(/^\n+/, "");
    const open = openFence(head);
    if (open === null) {
      parts.push(head.replace(/\s+$/, ""));
      reopen = "";
    } else {
      parts.push(`${head.replace(/\s+$/, "")}\n${FENCE}`);
      reopen = `${open}\n`;
    }
  }
  const last = reopen + rest;
  if (last.trim().length > 0 || parts.length === 0) parts.push(last);
  return parts;
}

/** Where to cut `text` so the first part has at most `room` units. */
function cutAt(text: string, room: number): number {
  const window = text.slice(0, room + 1);
  const half = Math.floor(room / 2);
  for (const sep of ["\n\n", "\n", " "]) {
    const at = window.lastIndexOf(sep, room - sep.length);
    if (at >= half) return at + sep.length;
  }
  // A hard cut: not between a high and a low surrogate.
  const code = text.charCodeAt(room - 1);
  return code >= 0xd800 && code <= 0xdbff ? room - 1 : room;
}

/** The opening fence line (with its language) of a code block still open at the end, or null. */
function openFence(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split("\n")) {
    const trimmed = line.trimStart();
    if (!trimmed.startsWith(FENCE)) continue;
    open = open === null ? trimmed : null;
  }
  return open;
}
