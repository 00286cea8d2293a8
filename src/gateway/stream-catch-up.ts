// What a streamed answer sends when the resilience core starts a reply over (a retried stream, a
// fallback): the new attempt usually says again what the client already has, which is held back
// until it passes that; one that says something else is a restart, and the caller tells the client
// to drop what it has. Kept per key (the text, a tool call's header, its arguments), so the pieces
// of a reply are judged each against what the client has of the same thing.

/** One piece of a reply: what it adds to (`key`) and the text it adds. */
export interface CatchUpPiece {
  key: string;
  text: string;
}

/** What to do with a piece: send what the client lacks of it, hold it, or restart the reply. */
export type CatchUpStep<P extends CatchUpPiece> =
  | { type: "send"; fresh: string }
  | { type: "hold" }
  | CatchUpRestart<P>;

/**
 * The new attempt differs from what the client has: the client drops `dropped` (its text so far,
 * per key) and is sent `pieces`, the new attempt from its start, which it now has.
 */
export interface CatchUpRestart<P extends CatchUpPiece> {
  type: "restart";
  dropped: ReadonlyMap<string, string>;
  pieces: readonly P[];
}

export class StreamCatchUp<P extends CatchUpPiece> {
  /** What the client has, per key, of the reply in progress. */
  private sent = new Map<string, string>();
  /** After a restart: the new attempt so far, per key; null when no restart is being caught up. */
  private replay: Map<string, string> | null = null;
  private readonly held: P[] = [];

  /** Whether a restart is being caught up (what the provider says now may repeat what was sent). */
  get replaying(): boolean {
    return this.replay !== null;
  }

  /** What the client has of `key`. */
  has(key: string): string {
    return this.sent.get(key) ?? "";
  }

  /** The provider started the reply over; nothing to catch up when the client has none of it. */
  restarted(): void {
    if (this.sent.size > 0) this.replay = new Map();
    this.held.length = 0;
  }

  /** A new reply begins (the next model call of a turn): the client has none of it. */
  reset(): void {
    this.sent.clear();
    this.replay = null;
    this.held.length = 0;
  }

  add(piece: P): CatchUpStep<P> {
    const had = this.has(piece.key);
    if (this.replay === null) {
      this.sent.set(piece.key, had + piece.text);
      return { type: "send", fresh: piece.text };
    }
    this.held.push(piece);
    const now = (this.replay.get(piece.key) ?? "") + piece.text;
    this.replay.set(piece.key, now);
    if (had.startsWith(now)) return { type: "hold" }; // still repeating what the client has
    if (now.startsWith(had)) {
      this.sent.set(piece.key, now);
      return { type: "send", fresh: now.slice(had.length) };
    }
    return this.restart();
  }

  /** At the end of the reply: a restart when the new attempt ended short of what the client has. */
  settle(): CatchUpRestart<P> | null {
    const replay = this.replay;
    if (replay === null) return null;
    const differs = [...this.sent].some(([key, text]) => (replay.get(key) ?? "") !== text);
    if (differs) return this.restart();
    this.replay = null;
    return null;
  }

  private restart(): CatchUpRestart<P> {
    const dropped = this.sent;
    const pieces = [...this.held];
    this.sent = new Map();
    for (const p of pieces) this.sent.set(p.key, this.has(p.key) + p.text);
    this.replay = null;
    this.held.length = 0;
    return { type: "restart", dropped, pieces };
  }
}
