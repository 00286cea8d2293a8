// The parse_mode check sendMessage and editMessageText run: the text read as MarkdownV2, Markdown
// (legacy) or HTML the way Telegram reads it, giving the plain text and its entities, or the
// "can't parse entities" reason Telegram would give. It follows the Bot API's formatting rules
// (core.telegram.org/bots/api#formatting-options), not every corner of Telegram's own parser:
// - MarkdownV2: `\` escapes any ASCII character; outside code every one of _ * [ ] ( ) ~ ` > # + - =
//   | { } . ! must be escaped unless it is markup; *bold* _italic_ __underline__ ~strike~
//   ||spoiler|| `code` ```pre``` and [text](url) must be closed, innermost first; `>` at the
//   start of a line is a quote.
// - Markdown: *bold* _italic_ `code` ```pre``` [text](url), no nesting, each must be closed.
// - HTML: only the tags Telegram knows (b strong i em u ins s strike del span tg-spoiler a code pre
//   blockquote tg-emoji), each closed in order; &lt; &gt; &amp; &quot; and &#N; are decoded.
// Offsets in the reasons count UTF-8 bytes of the text sent, as Telegram's do; entity offsets count
// UTF-16 code units of the parsed text, as the Bot API's do.
import type { WireEntity } from "./wire.js";

export type ParseMode = "MarkdownV2" | "Markdown" | "HTML";

export type Parsed = { ok: true; text: string; entities: WireEntity[] } | { ok: false; reason: string };

export function parseMarkup(text: string, mode: ParseMode | undefined): Parsed {
  switch (mode) {
    case undefined:
      return { ok: true, text, entities: [] };
    case "MarkdownV2":
      return parseMarkdownV2(text);
    case "Markdown":
      return parseMarkdown(text);
    case "HTML":
      return parseHtml(text);
    default: {
      const unreachable: never = mode;
      throw new Error(`unknown parse mode ${String(unreachable)}`);
    }
  }
}

const RESERVED_V2 = new Set("_*[]()~`>#+-=|{}.!");
const V2_NAMES: Record<string, string> = {
  "*": "Bold",
  _: "Italic",
  __: "Underline",
  "~": "Strikethrough",
  "||": "Spoiler",
  "[": "TextUrl",
};
const V2_TYPES: Record<string, string> = {
  "*": "bold",
  _: "italic",
  __: "underline",
  "~": "strikethrough",
  "||": "spoiler",
};

interface Open {
  marker: string;
  /** Where it starts in the parsed text (UTF-16 units). */
  offset: number;
  /** Where its marker is in the text sent (UTF-8 bytes). */
  byte: number;
}

const bytesBefore = (text: string, i: number): number => Buffer.byteLength(text.slice(0, i), "utf8");

function fail(reason: string): Parsed {
  return { ok: false, reason };
}

function parseMarkdownV2(text: string): Parsed {
  let out = "";
  const entities: WireEntity[] = [];
  const stack: Open[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? "";
    const atLineStart = i === 0 || text[i - 1] === "\n";
    if (c === "\\" && i + 1 < text.length && (text.charCodeAt(i + 1) ?? 0) <= 126) {
      out += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const pre = text.startsWith("```", i);
      const fence = pre ? "```" : "`";
      const start = i;
      i += fence.length;
      let language: string | undefined;
      if (pre) {
        const newline = text.indexOf("\n", i);
        const first = newline === -1 ? "" : text.slice(i, newline);
        if (newline !== -1 && /^[A-Za-z0-9_+-]*$/.test(first)) {
          language = first === "" ? undefined : first;
          i = newline + 1;
        }
      }
      const offset = out.length;
      let closed = false;
      while (i < text.length) {
        if (text[i] === "\\" && i + 1 < text.length) {
          out += text[i + 1];
          i += 2;
          continue;
        }
        if (text.startsWith(fence, i)) {
          closed = true;
          i += fence.length;
          break;
        }
        out += text[i];
        i += 1;
      }
      if (!closed)
        return fail(
          `Can't find end of ${pre ? "Pre" : "Code"} entity at byte offset ${bytesBefore(text, start)}`,
        );
      const entity: WireEntity = { type: pre ? "pre" : "code", offset, length: out.length - offset };
      if (language) entity.language = language;
      if (entity.length > 0) entities.push(entity);
      continue;
    }
    if (c === ">" && atLineStart) {
      const end = text.indexOf("\n", i);
      const offset = out.length;
      const line = parseMarkdownV2(text.slice(i + 1, end === -1 ? text.length : end));
      if (!line.ok) return line;
      for (const e of line.entities) entities.push({ ...e, offset: e.offset + offset });
      out += line.text;
      entities.push({ type: "blockquote", offset, length: line.text.length });
      i = end === -1 ? text.length : end;
      continue;
    }
    if (c === "]") {
      const top = stack[stack.length - 1];
      if (top?.marker !== "[") return reservedV2(c);
      if (text[i + 1] !== "(") return fail(`Can't find end of TextUrl entity at byte offset ${top.byte}`);
      let url = "";
      let j = i + 2;
      while (j < text.length && text[j] !== ")") {
        if (text[j] === "\\" && j + 1 < text.length) j += 1;
        url += text[j];
        j += 1;
      }
      if (j >= text.length) return fail(`Can't find end of a URL at byte offset ${bytesBefore(text, i + 1)}`);
      stack.pop();
      entities.push({ type: "text_link", offset: top.offset, length: out.length - top.offset, url });
      i = j + 1;
      continue;
    }
    const marker = c === "_" && text[i + 1] === "_" ? "__" : c === "|" && text[i + 1] === "|" ? "||" : c;
    if (marker in V2_NAMES) {
      const top = stack[stack.length - 1];
      if (top && top.marker === marker && marker !== "[") {
        stack.pop();
        const length = out.length - top.offset;
        if (length > 0) entities.push({ type: V2_TYPES[marker] ?? marker, offset: top.offset, length });
      } else stack.push({ marker, offset: out.length, byte: bytesBefore(text, i) });
      i += marker.length;
      continue;
    }
    if (RESERVED_V2.has(c)) return reservedV2(c);
    out += c;
    i += 1;
  }
  const open = stack[stack.length - 1];
  if (open) return fail(`Can't find end of ${V2_NAMES[open.marker]} entity at byte offset ${open.byte}`);
  return { ok: true, text: out, entities: sortEntities(entities) };
}

function reservedV2(c: string): Parsed {
  return fail(`Character '${c}' is reserved and must be escaped with the preceding '\\'`);
}

const LEGACY_TYPES: Record<string, string> = { "*": "bold", _: "italic", "`": "code", "```": "pre" };

function parseMarkdown(text: string): Parsed {
  let out = "";
  const entities: WireEntity[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? "";
    if (c === "\\" && "*_`[".includes(text[i + 1] ?? "")) {
      out += text[i + 1];
      i += 2;
      continue;
    }
    const marker = c === "`" && text.startsWith("```", i) ? "```" : c;
    if (marker in LEGACY_TYPES || marker === "[") {
      const startByte = bytesBefore(text, i);
      const close = marker === "[" ? "]" : marker;
      const end = text.indexOf(close, i + marker.length);
      if (end === -1) return fail(`Can't find end of the entity starting at byte offset ${startByte}`);
      const inner = text.slice(i + marker.length, end);
      const offset = out.length;
      out += inner;
      i = end + close.length;
      if (marker === "[") {
        const url = text[i] === "(" ? text.indexOf(")", i) : -1;
        if (url !== -1) {
          entities.push({ type: "text_link", offset, length: inner.length, url: text.slice(i + 1, url) });
          i = url + 1;
        }
        continue;
      }
      if (inner.length > 0)
        entities.push({ type: LEGACY_TYPES[marker] ?? "bold", offset, length: inner.length });
      continue;
    }
    out += c;
    i += 1;
  }
  return { ok: true, text: out, entities };
}

const HTML_TAGS: Record<string, string> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  span: "spoiler",
  "tg-spoiler": "spoiler",
  a: "text_link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
  "tg-emoji": "custom_emoji",
};
const HTML_ESCAPES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

interface OpenTag {
  name: string;
  offset: number;
  attributes: string;
}

function parseHtml(text: string): Parsed {
  let out = "";
  const entities: WireEntity[] = [];
  const stack: OpenTag[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? "";
    if (c === "&") {
      const semi = text.indexOf(";", i);
      const name = semi === -1 ? "" : text.slice(i + 1, semi);
      const numeric = /^#([0-9]{1,7}|x[0-9a-fA-F]{1,6})$/.exec(name);
      if (name in HTML_ESCAPES || numeric) {
        out += numeric
          ? String.fromCodePoint(Number(name.startsWith("#x") ? `0x${name.slice(2)}` : name.slice(1)))
          : HTML_ESCAPES[name];
        i = semi + 1;
        continue;
      }
      out += c;
      i += 1;
      continue;
    }
    if (c !== "<") {
      out += c;
      i += 1;
      continue;
    }
    const byte = bytesBefore(text, i);
    const end = text.indexOf(">", i);
    if (end === -1) return fail(`Unclosed start tag at byte offset ${byte}`);
    const tag = text.slice(i + 1, end);
    i = end + 1;
    if (tag.startsWith("/")) {
      const name = tag.slice(1).trim().toLowerCase();
      const open = stack.pop();
      if (!open) return fail(`Unexpected end tag at byte offset ${byte}`);
      if (open.name !== name)
        return fail(
          `Unmatched end tag at byte offset ${byte}, expected "</${open.name}>", found "</${name}>"`,
        );
      const type = HTML_TAGS[name] ?? name;
      const entity: WireEntity = { type, offset: open.offset, length: out.length - open.offset };
      if (type === "text_link") entity.url = attribute(open.attributes, "href") ?? "";
      if (entity.length > 0) entities.push(entity);
      continue;
    }
    const name = (/^[A-Za-z][A-Za-z0-9-]*/.exec(tag)?.[0] ?? "").toLowerCase();
    if (!(name in HTML_TAGS)) return fail(`Unsupported start tag "${name}" at byte offset ${byte}`);
    if (name === "span" && attribute(tag, "class") !== "tg-spoiler")
      return fail(`Tag "span" must have class "tg-spoiler" at byte offset ${byte}`);
    stack.push({ name, offset: out.length, attributes: tag.slice(name.length) });
  }
  const open = stack[stack.length - 1];
  if (open) return fail(`Can't find end tag corresponding to start tag "${open.name}"`);
  return { ok: true, text: out, entities: sortEntities(entities) };
}

function attribute(attributes: string, name: string): string | undefined {
  const match = new RegExp(`${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, "i").exec(attributes);
  return match ? (match[1] ?? match[2] ?? match[3]) : undefined;
}

function sortEntities(entities: WireEntity[]): WireEntity[] {
  return entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
}
