// The few lines at the bottom of a terminal that are redrawn in place (a spinner, a retry's
// countdown): each redraw goes back up over the lines it drew and erases them first. Lines are cut
// to the terminal's width so none wraps, which would make the way back up miscount.
import { cut, eraseUp } from "./terminal-style.js";

export interface LiveLine {
  text: string;
  /** Applied after the text is cut to the width. */
  style?: (text: string) => string;
}

export class LiveArea {
  /** Lines on the screen now; 0 when nothing is drawn. */
  private drawn = 0;

  constructor(
    private readonly write: (text: string) => void,
    private readonly columns: () => number,
  ) {}

  get showing(): boolean {
    return this.drawn > 0;
  }

  /** Replace what is drawn with `lines`; the cursor stays at the end of the last one. */
  show(lines: readonly LiveLine[]): void {
    const width = Math.max(10, this.columns() - 1);
    const body = lines.map((l) => {
      const text = cut(l.text, width);
      return l.style ? l.style(text) : text;
    });
    this.write(`${this.drawn > 0 ? eraseUp(this.drawn - 1) : ""}${body.join("\n")}`);
    this.drawn = lines.length;
  }

  /** Erase what is drawn; the cursor is left at the start of the empty line. */
  clear(): void {
    if (this.drawn === 0) return;
    this.write(eraseUp(this.drawn - 1));
    this.drawn = 0;
  }
}
