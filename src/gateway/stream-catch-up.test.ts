import { describe, expect, it } from "vitest";
import { type CatchUpPiece, type CatchUpStep, StreamCatchUp } from "./stream-catch-up.js";

/** A client that does what it is told: appends what is sent, drops its reply on a restart. */
class Client {
  readonly has = new Map<string, string>();
  sentChars = 0;
  restarts = 0;

  take(step: CatchUpStep<CatchUpPiece> | null, piece?: CatchUpPiece): void {
    if (step === null || step.type === "hold") return;
    if (step.type === "send") {
      const key = piece?.key ?? "";
      this.has.set(key, (this.has.get(key) ?? "") + step.fresh);
      this.sentChars += step.fresh.length;
      return;
    }
    this.restarts++;
    for (const key of step.dropped.keys()) this.has.delete(key);
    for (const p of step.pieces) {
      this.has.set(p.key, (this.has.get(p.key) ?? "") + p.text);
      this.sentChars += p.text.length;
    }
  }
}

/** A reply as the provider streams it: one piece per character, in order. */
const pieces = (key: string, text: string): CatchUpPiece[] => [...text].map((c) => ({ key, text: c }));

/** The first attempt cut after `cut` pieces, then the provider starts over with `second`. */
function run(first: CatchUpPiece[], cut: number, second: CatchUpPiece[]): Client {
  const catchUp = new StreamCatchUp<CatchUpPiece>();
  const client = new Client();
  for (const p of first.slice(0, cut)) client.take(catchUp.add(p), p);
  catchUp.restarted();
  for (const p of second) client.take(catchUp.add(p), p);
  client.take(catchUp.settle());
  return client;
}

const text = (client: Client, key = "text") => client.has.get(key) ?? "";

describe("StreamCatchUp", () => {
  const reply = "echo: hello there";

  it("sends a reply the new attempt repeats once, wherever the first attempt was cut", () => {
    for (let cut = 0; cut <= reply.length; cut++) {
      const client = run(pieces("text", reply), cut, pieces("text", reply));
      expect(text(client), `cut at ${cut}`).toBe(reply);
      expect(client.restarts, `cut at ${cut}`).toBe(0);
      expect(client.sentChars, `cut at ${cut}`).toBe(reply.length);
    }
  });

  it("restarts a reply the new attempt says differently, and the client ends with the new one", () => {
    const other = "echo: goodbye";
    for (let cut = 0; cut <= reply.length; cut++) {
      const client = run(pieces("text", reply), cut, pieces("text", other));
      expect(text(client), `cut at ${cut}`).toBe(other);
      // Up to "echo: " the two agree: nothing to drop yet, so no restart.
      expect(client.restarts, `cut at ${cut}`).toBe(cut > "echo: ".length ? 1 : 0);
    }
  });

  it("restarts at the end when the new attempt stops short of what the client has", () => {
    for (let cut = 6; cut <= reply.length; cut++) {
      const client = run(pieces("text", reply), cut, pieces("text", "echo:"));
      expect(text(client), `cut at ${cut}`).toBe("echo:");
      expect(client.restarts, `cut at ${cut}`).toBe(1);
    }
    const empty = run(pieces("text", reply), 4, []);
    expect(text(empty)).toBe("");
    expect(empty.restarts).toBe(1);
  });

  it("judges each key on its own: text and a tool call's arguments, cut anywhere", () => {
    const first = [...pieces("text", "ok"), ...pieces("call:0:args", '{"a":1}')];
    for (let cut = 0; cut <= first.length; cut++) {
      const same = run(first, cut, first);
      expect([text(same), text(same, "call:0:args")], `cut at ${cut}`).toEqual(["ok", '{"a":1}']);
      expect(same.restarts).toBe(0);
      const changed = [...pieces("text", "ok"), ...pieces("call:0:args", '{"b":2}')];
      const other = run(first, cut, changed);
      expect([text(other), text(other, "call:0:args")], `cut at ${cut}`).toEqual(["ok", '{"b":2}']);
      expect(other.restarts, `cut at ${cut}`).toBe(cut > 4 ? 1 : 0); // "ok" and `{"` agree
    }
  });

  it("has nothing to catch up after a restart before anything was sent, or after a reset", () => {
    const catchUp = new StreamCatchUp<CatchUpPiece>();
    catchUp.restarted();
    expect(catchUp.replaying).toBe(false);
    expect(catchUp.add({ key: "text", text: "a" })).toEqual({ type: "send", fresh: "a" });
    catchUp.reset();
    catchUp.restarted();
    expect(catchUp.replaying).toBe(false);
    expect(catchUp.add({ key: "text", text: "b" })).toEqual({ type: "send", fresh: "b" });
  });
});
