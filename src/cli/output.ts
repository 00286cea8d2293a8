// How commands talk to the terminal: plain text for people, one JSON document on stdout with --json.
// A stream that was closed is skipped (std-streams.ts), so no command dies of its own output.
import { TenaxError } from "../core/errors.js";
import { writeStd } from "./std-streams.js";

export interface Output {
  json: boolean;
  /** Print a line for people (suppressed in --json mode). */
  line(text?: string): void;
  /** Print a warning on stderr (kept in --json mode, where it never mixes with the document). */
  warn(text: string): void;
  /** Print the one JSON document of a --json command. */
  document(value: unknown): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    line(text = "") {
      if (!json) writeStd("stdout", `${text}\n`);
    },
    warn(text) {
      writeStd("stderr", `warning: ${text}\n`);
    },
    document(value) {
      writeStd("stdout", `${JSON.stringify(value, null, 2)}\n`);
    },
  };
}

/** Print an error the way every command does: what went wrong, then what to do. */
export function reportError(error: unknown, json: boolean): number {
  if (TenaxError.isInstance(error)) {
    if (json) writeStd("stdout", `${JSON.stringify({ error: error.toJSON() }, null, 2)}\n`);
    // Some messages already say what kind of error they are ("config error: file:line: ...").
    writeStd(
      "stderr",
      /^[a-z ]*error: /.test(error.message) ? `${error.message}\n` : `error: ${error.message}\n`,
    );
    if (error.hint) writeStd("stderr", `${error.hint}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (json)
    writeStd("stdout", `${JSON.stringify({ error: { code: "internal", message: String(error) } })}\n`);
  writeStd("stderr", `error: unexpected failure (a bug in Tenax): ${message}\n`);
  return 1;
}

/** Format a millisecond timestamp for people; a bad one is shown as it is. */
export function formatTime(ms: number | null): string {
  if (ms === null) return "?";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** Render rows as an aligned text table. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [fmt(headers), ...rows.map(fmt)].join("\n");
}
