// A tool result in a few words, for people watching a turn (`tenax chat`, run events): "12 lines",
// "exit 1: no such file", "wrote 120 bytes". Computed from the result as it is stored, so it says
// nothing the transcript does not; never the whole output.
export interface ToolSummary {
  /** False when the tool failed, or its command did (a non-zero exit, a signal, a timeout). */
  ok: boolean;
  text: string;
}

const MAX_CHARS = 100;

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
