// The name the model sees for an MCP server's tool: `mcp__SERVER__TOOL`, made to fit every
// provider's rule for function names (OpenAI, Anthropic and Gemini all take [A-Za-z0-9_-], at most
// 64 characters; Gemini also wants a letter or _ first, which the `mcp` prefix gives). A character
// outside that set becomes `_`; a name too long, or one that two tools of a server would share
// once made safe, is cut and ends in a short hash of the server's own name for the tool, so the
// same tool keeps the same name from one start to the next.
import { createHash } from "node:crypto";

export const MCP_PREFIX = "mcp__";
const MAX_NAME = 64;
const HASH_CHARS = 8;

const safe = (text: string) => text.replace(/[^A-Za-z0-9_-]/g, "_");
const hash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, HASH_CHARS);

/** The tool names of one server, in the server's order: its own name → the model's name. */
export function mcpToolNames(server: string, tools: readonly string[]): Map<string, string> {
  const prefix = `${MCP_PREFIX}${safe(server)}__`;
  const plain = tools.map((tool) => `${prefix}${safe(tool)}`);
  const counts = new Map<string, number>();
  for (const name of plain) counts.set(name, (counts.get(name) ?? 0) + 1);
  const names = new Map<string, string>();
  tools.forEach((tool, i) => {
    const name = plain[i] as string;
    const exact = name === `${prefix}${tool}`;
    if (name.length <= MAX_NAME && (counts.get(name) === 1 || exact)) {
      names.set(tool, name);
      return;
    }
    const tail = `_${hash(tool)}`;
    names.set(tool, `${name.slice(0, MAX_NAME - tail.length)}${tail}`);
  });
  return names;
}
