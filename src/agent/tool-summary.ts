// A tool call and its result in a few words, for people watching a turn or reading it later
// (`tenax chat`, run events, the dashboard's transcript): what it worked on ("ls -la", "src/a.ts")
// and how it went ("12 lines", "exit 1: no such file", "wrote 120 bytes"). Computed from the call
// and the result as they are stored, so it says nothing the transcript does not; never the whole
// output.
export interface ToolSummary {
  /** False when the tool failed, or its command did (a non-zero exit, a signal, a timeout). */
  ok: boolean;
  text: string;
}

const MAX_CHARS = 100;

/** A failed tool's result, as the model reads it and the store keeps it: {"error": message, ...}. */
export function errorResult(message: string, details: Record<string, unknown> = {}): string {
  return JSON.stringify({ error: message, ...details });
}

/** Whether a stored tool result is a failed tool's (errorResult's shape). */
export function isErrorResult(result: string): boolean {
  return typeof parseObject(result)?.error === "string";
}

/** The command or path a tool call works on, from its arguments as the model sent them. */
export function toolTarget(name: string, argumentsJson: string): string {
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(argumentsJson);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      args = parsed as Record<string, unknown>;
  } catch {
    return oneLine(argumentsJson);
  }
  const str = (key: string): string | null => (typeof args[key] === "string" ? (args[key] as string) : null);
  switch (name) {
    case "terminal":
      return `${oneLine(str("command") ?? "")}${args.background === true ? "  (background)" : ""}`;
    case "read_file": {
      const from = typeof args.offset === "number" ? ` from line ${args.offset}` : "";
      return `${str("path") ?? ""}${from}`;
    }
    case "write_file":
    case "patch":
      return str("path") ?? "";
    case "search_files":
      return `${oneLine(str("pattern") ?? "")} in ${str("path") ?? "."}`;
    case "process":
      return [str("action"), str("id")].filter((s) => s !== null).join(" ");
    case "session_search":
      return oneLine(str("query") ?? "");
    case "delegate_task":
      return oneLine(str("title") ?? str("task") ?? "");
    default:
      return oneLine(str("action") ?? scalars(args));
  }
}

/** An unknown tool's (an MCP server's) arguments as `key=value`, the plain ones only. */
function scalars(args: Record<string, unknown>): string {
  return Object.entries(args)
    .filter(([, v]) => typeof v === "string" || typeof v === "number" || typeof v === "boolean")
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ");
}

/** Summarize `result` (the tool message's content) of tool `name`; `failed` when the tool threw. */
export function summarizeToolResult(name: string, result: string, failed: boolean): ToolSummary {
  const value = parseObject(result);
  if (failed) {
    const message = value && typeof value.error === "string" ? value.error : result;
    return { ok: false, text: short(firstLine(message)) };
  }
  if (value === null) return { ok: true, text: lines(result) };
  switch (name) {
    case "terminal":
      return terminal(value);
    case "read_file":
      return { ok: true, text: readFile(value) };
    case "write_file":
      return {
        ok: true,
        text: `wrote ${num(value.bytes_written)} bytes${value.created === true ? " (new file)" : ""}`,
      };
    case "patch":
      return {
        ok: true,
        text: `${plural(num(value.replacements), "replacement")} from line ${num(value.first_line)}`,
      };
    case "search_files": {
      const matches = Array.isArray(value.matches) ? value.matches.length : 0;
      return {
        ok: true,
        text: `${plural(matches, "match", "matches")} in ${plural(num(value.files_searched), "file")} searched${
          value.truncated === true ? " (stopped early)" : ""
        }`,
      };
    }
    default:
      return { ok: true, text: "done" };
  }
}

function terminal(value: Record<string, unknown>): ToolSummary {
  if (value.background === true)
    return { ok: true, text: `started in the background as ${String(value.id)} (pid ${num(value.pid)})` };
  const out = typeof value.stdout === "string" ? value.stdout : "";
  const err = typeof value.stderr === "string" ? value.stderr : "";
  if (value.interrupted === true) return { ok: false, text: "interrupted" };
  if (value.timed_out === true) return { ok: false, text: short(String(value.note ?? "timed out")) };
  if (typeof value.signal === "string" && value.signal !== "")
    return { ok: false, text: `killed by ${value.signal}` };
  const code = value.exit_code;
  if (typeof code === "number" && code !== 0) {
    const said = firstLine(err) || firstLine(out);
    return { ok: false, text: short(`exit ${code}${said ? `: ${said}` : ""}`) };
  }
  const left = value.left_running ? "; left processes running in the background" : "";
  const errLines = err.trim() === "" ? "" : `, ${lines(err)} on stderr`;
  return { ok: true, text: `${lines(out)}${errLines}${left}` };
}

function readFile(value: Record<string, unknown>): string {
  const total = num(value.total_lines);
  const start = num(value.start_line);
  const end = num(value.end_line);
  if (value.truncated === true) return `lines ${start}-${end} of ${total}`;
  return plural(total, "line");
}

function parseObject(text: string): Record<string, unknown> | null {
  if (!text.startsWith("{")) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function lines(text: string): string {
  if (text === "") return "no output";
  const count = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  return plural(count, "line");
}

function oneLine(text: string, max = 120): string {
  const line = text.replace(/\s*\n\s*/g, " ⏎ ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? ""
  );
}

function short(text: string): string {
  return text.length <= MAX_CHARS ? text : `${text.slice(0, MAX_CHARS - 1)}…`;
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
