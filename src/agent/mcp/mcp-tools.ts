// An MCP server's tools as the agent's own: the model's name for each (tool-names.ts), its JSON
// Schema as the server gave it, and its result as a tool result like any other's. Text is passed
// on as it came; structured content as JSON beside it; an image, audio or a binary resource is
// named with its type and size (a tool result reaches the model as text); a result the server
// marks as an error becomes the tool error the model reads. A tool the server lists under the
// config's `approve` waits for an approval, as a held-back command does.
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { ExecGate } from "../approvals/exec-gate.js";
import { type Tool, ToolError } from "../tools/types.js";
import type { McpLink } from "./mcp-link.js";

export interface McpToolOptions {
  link: McpLink;
  tool: McpTool;
  /** The name the model sees. */
  name: string;
  /** Held back for an approval first (the server's `approve` lists it). */
  gate: ExecGate | null;
}

export function mcpTool({ link, tool, name, gate }: McpToolOptions): Tool {
  const described = tool.description?.trim() || tool.title || tool.name;
  return {
    spec: {
      name,
      description: `${described} (tool "${tool.name}" of MCP server "${link.name}")`,
      parameters: objectSchema(tool.inputSchema),
    },
    // A resumed turn never repeats a call to a server it cannot see into.
    readOnly: false,
    run: async (args, context) => {
      if (!link.ready) throw new ToolError(link.unavailable(name), { ran: false });
      await gate?.admit(name, `${name} ${JSON.stringify(args)}`, context);
      const result = await link.call(tool.name, args, name, context);
      return toolResult(name, result);
    },
  };
}

/** The tool's input schema as a provider takes it: an object schema, without a `$schema` dialect. */
function objectSchema(schema: McpTool["inputSchema"]): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema as Record<string, unknown>;
  return { ...rest, type: "object", properties: rest.properties ?? {} };
}

/** What the model reads: the text, and the structured content when there is any. */
export function toolResult(name: string, result: CallToolResult): unknown {
  const parts = (result.content ?? []).map(describePart);
  const text = parts.join("\n");
  if (result.isError === true)
    throw new ToolError(
      `${name} failed: ${text === "" ? "the server said the call failed, and no more" : text}`,
    );
  if (result.structuredContent !== undefined)
    return text === ""
      ? { structured_content: result.structuredContent }
      : { text, structured_content: result.structuredContent };
  return text;
}

type Part = NonNullable<CallToolResult["content"]>[number];

function describePart(part: Part): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "image":
    case "audio":
      return `[${part.type}: ${part.mimeType}, ${formatBytes(base64Bytes(part.data))}, not shown: tool results reach the model as text]`;
    case "resource": {
      const r = part.resource;
      if ("text" in r && typeof r.text === "string") return `[resource ${r.uri}]\n${r.text}`;
      const blob = "blob" in r && typeof r.blob === "string" ? r.blob : "";
      return `[resource ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ""}, ${formatBytes(base64Bytes(blob))} of binary content, not shown]`;
    }
    case "resource_link":
      return `[resource link ${part.uri}${part.name ? ` (${part.name})` : ""}]`;
    default:
      return `[${(part as { type: string }).type} content, not shown]`;
  }
}

const base64Bytes = (data: string) => Math.floor((data.replace(/=+$/, "").length * 3) / 4);

function formatBytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}
