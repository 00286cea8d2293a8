// A session's title as every surface shows it (the dashboard, `tenax sessions list`, the gateway's
// /api/sessions): the stored one when there is one (the gateway's title task, cron's job name, a
// chat platform's chat), else the first user message on one line, else a placeholder naming the
// source. The fallback is computed when the session is read, never stored: old sessions, sessions
// made outside the gateway, and sessions whose title write was lost all get one, and a title the
// title task writes later takes over by itself.

/** The longest plain title, in characters (the first message, cut at a word). */
export const TITLE_MAX_CHARS = 60;

/** Where a session's shown title comes from. */
export type TitleSource = "stored" | "first_message" | "placeholder";

/** The first message as a title: one line, trimmed, at most TITLE_MAX_CHARS, cut at a word. */
export function plainTitle(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= TITLE_MAX_CHARS) return line || "untitled";
  const cut = line.slice(0, TITLE_MAX_CHARS - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * The title to show: `stored` unless it is blank, else `firstUserText` (the start of the session's
 * first user message, null when it has none), else "SOURCE session (no user message)".
 */
export function sessionTitle(
  stored: string | null,
  firstUserText: string | null,
  source: string,
): { title: string; title_source: TitleSource } {
  if (stored !== null && /\S/.test(stored)) return { title: stored, title_source: "stored" };
  if (firstUserText !== null && /\S/.test(firstUserText))
    return { title: plainTitle(firstUserText), title_source: "first_message" };
  return { title: `${source} session (no user message)`, title_source: "placeholder" };
}
