// The `mcp` section of config.yaml: the Model Context Protocol servers whose tools the agent gets,
// each either a command Tenax starts and talks to over stdio, or a Streamable HTTP endpoint.
// `${VAR}` works in every value as everywhere in config.yaml; header values are secrets, and so is
// every variable an `env` or `args` value reads (config/secrets.ts), while literal values there
// stay readable (a path in `env` is not redacted from every tool's output).
import { z } from "zod";
import { httpUrl, text } from "./schema-parts.js";

/** A server's name is part of every tool name the model sees (`mcp__NAME__TOOL`). */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const headerName = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const seconds = () =>
  z
    .number({ error: "expected a number of seconds (more than 0, at most 3600)" })
    .positive({ error: "expected a number of seconds (more than 0, at most 3600)" })
    .max(3600, { error: "expected a number of seconds (more than 0, at most 3600)" });

/** Tools that wait for an approval (tools.exec's flow) before they run: a list, or all of them. */
const approve = z
  .union([z.literal("all"), z.array(text("a tool name as the server lists it"))], {
    error: 'expected a list of the server\'s tool names, or "all"',
  })
  .default([]);

const common = {
  /** Seconds a call may take before it is given up. */
  timeout: seconds().default(60),
  /** Seconds the server's start (initialize, then its tools) may take; left out, the timeout or 30, whichever is longer. */
  start_timeout: seconds().optional(),
  approve,
};

const stdioServer = z.strictObject({
  command: text("the command that starts the server (npx, uvx, node, a path)"),
  args: z
    .array(z.string({ error: "expected a string" }), { error: "expected a list of strings" })
    .default([]),
  env: z
    .record(
      z.string().regex(ENV_NAME, { error: "expected a variable name" }),
      z.string({ error: "expected a string" }),
      {
        error: "expected a mapping of variable names to values",
      },
    )
    .default({}),
  /** The folder it runs in; the profile's folder when left out. */
  cwd: text("a folder").optional(),
  ...common,
});

const httpServer = z.strictObject({
  url: httpUrl,
  headers: z
    .record(z.string().regex(headerName, { error: "expected an HTTP header name" }), z.string(), {
      error: "expected a mapping of HTTP header names to values",
    })
    .default({}),
  ...common,
});

const server = z.unknown().transform((value, ctx): McpServerConfig => {
  const isRecord = typeof value === "object" && value !== null && !Array.isArray(value);
  const hasCommand = isRecord && "command" in value;
  const hasUrl = isRecord && "url" in value;
  if (!isRecord || hasCommand === hasUrl) {
    ctx.addIssue({
      code: "custom",
      message: hasCommand
        ? "give either command (a stdio server) or url (a Streamable HTTP server), not both"
        : "expected { command, args, env, cwd, timeout } for a stdio server or { url, headers, timeout } for a Streamable HTTP server",
    });
    return z.NEVER;
  }
  const parsed = (hasCommand ? stdioServer : httpServer).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    ctx.addIssue({ ...issue, path: issue.path } as z.core.$ZodRawIssue);
  return z.NEVER;
});

export const mcpSchema = z.strictObject({
  servers: z
    .record(z.string(), server, {
      error: (issue) => (issue.code === "invalid_type" ? "expected a mapping of server names" : undefined),
    })
    .superRefine((servers, ctx) => {
      for (const name of Object.keys(servers)) {
        if (SERVER_NAME.test(name)) continue;
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `"${name}" is not a server name: use letters, digits, - and _ (at most 32, starting with a letter or digit); it becomes part of each tool's name, mcp__${name.replace(/[^A-Za-z0-9_-]/g, "_")}__TOOL`,
        });
      }
    })
    .default({}),
});

/** The least a server's start is given when `start_timeout` is left out (npx -y and uvx download first). */
export const MIN_START_SECONDS = 30;

/** How long a server's start may take. */
export function mcpStartSeconds(server: Pick<McpServerConfig, "timeout" | "start_timeout">): number {
  return server.start_timeout ?? Math.max(server.timeout, MIN_START_SECONDS);
}

export type McpStdioServerConfig = z.infer<typeof stdioServer>;
export type McpHttpServerConfig = z.infer<typeof httpServer>;
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;
export type McpConfig = z.infer<typeof mcpSchema>;
