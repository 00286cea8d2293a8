// The agent's Markdown as Telegram HTML (parse_mode HTML): the few forms a reply uses (fenced
// and inline code, bold, italic, links, headings) become Telegram's tags, and everything else is
// escaped text, so the Bot API can only reject a part for a reason of its own; the adapter then
// sends that part again as plain text. HTML, not MarkdownV2: MarkdownV2 needs 18 characters
// escaped outside code, and an agent's reply is full of them.

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function toTelegramHtml(markdown: string): string {
  const out: string[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = /^\s*```\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && !/^\s*```\s*$/.test(lines[j] ?? "")) body.push(lines[j++] ?? "");
      const lang = fence[1] ? ` class="language-${escapeAttr(fence[1])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(body.join("\n"))}</code></pre>`);
      i = j;
      continue;
    }
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    out.push(heading ? `<b>${inline(heading[1] ?? "")}</b>` : inline(line));
  }
  return out.join("\n");
}

/** One line outside code blocks: inline code first (nothing inside it is formatting), then the rest. */
function inline(line: string): string {
  return line
    .split(/(`[^`\n]+`)/)
    .map((piece, i) => (i % 2 === 1 ? `<code>${escapeHtml(piece.slice(1, -1))}</code>` : styled(piece)))
    .join("");
}

function styled(text: string): string {
  return escapeHtml(text)
    .replace(
      /\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g,
      (_m, label: string, url: string) => `<a href="${escapeAttr(url)}">${label}</a>`,
    )
    .replace(/\*\*(?=\S)([^*\n]*?\S)\*\*/g, "<b>$1</b>")
    .replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?=[^*\w]|$)/g, "$1<i>$2</i>")
    .replace(/~~(?=\S)([^~\n]*?\S)~~/g, "<s>$1</s>");
}

function escapeAttr(text: string): string {
  return text.replace(/&(?!amp;|lt;|gt;|quot;)/g, "&amp;").replace(/"/g, "&quot;");
}
