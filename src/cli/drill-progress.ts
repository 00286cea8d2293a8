// What `tenax drill` shows while it runs, on stderr (stdout keeps the table, or the one JSON
// document with --json): a line when a row starts and its result when it ends; on a terminal the
// start is a live line with the time so far, redrawn in place, which the result replaces.
import { formatMs } from "../drill/report.js";
import type { DrillRow, RowStart } from "../drill/runner.js";
import { LiveArea } from "./chat/live-area.js";
import { type Paint, paint, type TerminalCaps } from "./chat/terminal-style.js";

export interface ProgressIO {
  write(text: string): void;
  caps: TerminalCaps;
  columns(): number;
}

export interface ProgressDeps {
  now(): number;
  every(ms: number, tick: () => void): { cancel(): void };
}

const REDRAW_MS = 250;
const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export const defaultProgressDeps: ProgressDeps = {
  now: () => Date.now(),
  every: (ms, tick) => {
    const timer = setInterval(tick, ms);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
};

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

export class DrillProgress {
  private readonly p: Paint;
  private readonly area: LiveArea | null;
  private running: { start: RowStart; since: number } | null = null;
  private timer: { cancel(): void } | null = null;
  private frame = 0;

  constructor(
    private readonly io: ProgressIO,
    private readonly deps: ProgressDeps = defaultProgressDeps,
  ) {
    this.p = paint(io.caps.color);
    this.area = io.caps.live
      ? new LiveArea(
          (t) => io.write(t),
          () => io.columns() || 80,
        )
      : null;
  }

  started(start: RowStart): void {
    this.running = { start, since: this.deps.now() };
    if (this.area === null) {
      this.io.write(
        `${this.label(start)}: running (the ${start.expected_layer} layer should catch it; deadline ${seconds(start.deadline_ms)})\n`,
      );
      return;
    }
    this.timer ??= this.deps.every(REDRAW_MS, () => this.draw());
    this.draw();
  }

  finished(row: DrillRow): void {
    const running = this.running;
    this.running = null;
    this.timer?.cancel();
    this.timer = null;
    this.area?.clear();
    const took = running === null ? "" : `; the row took ${seconds(this.deps.now() - running.since)}`;
    const caught =
      row.caught_by === null
        ? "no layer caught it"
        : `caught by ${row.caught_by}${row.detect_ms === null ? "" : ` in ${formatMs(row.detect_ms)}`}`;
    const verdict = row.result === "pass" ? this.p.green("ok  ") : this.p.red("FAIL");
    const where = running === null ? row.fault : this.label(running.start);
    this.io.write(`${verdict} ${where}: ${caught}${took}\n`);
  }

  /** Put the live line away (the drill ended, or stopped on an error). */
  close(): void {
    this.timer?.cancel();
    this.timer = null;
    this.area?.clear();
  }

  private label(start: RowStart): string {
    return `[${start.index + 1}/${start.total}] ${start.fault}`;
  }

  private draw(): void {
    const running = this.running;
    if (this.area === null || running === null) return;
    this.frame++;
    const spin = FRAMES[this.frame % FRAMES.length] ?? "";
    const elapsed = this.deps.now() - running.since;
    this.area.show([
      {
        text: `${spin} ${this.label(running.start)} · ${seconds(elapsed)} (the ${running.start.expected_layer} layer should catch it)`,
        style: this.p.dim,
      },
    ]);
  }
}
