// What redaction by value costs: 1 MB of text with 50 secrets of 16 to 64 characters (a few of
// them in it), redacted whole, as the store and the tool layer do, and as a stream of 4-character
// deltas, as a model's reply goes through the provider boundary. Run it with
// `npx tsc -p bench/tsconfig.json && node dist-bench/bench/redact.js`.
import { randomBytes } from "node:crypto";
import { type NamedSecret, Redactor } from "../src/core/redact.js";
import { median } from "./stats.js";

export interface RedactFigures {
  secrets: number;
  text_bytes: number;
  occurrences: number;
  whole_ms: number;
  stream_ms: number;
  stream_deltas: number;
  stream_ns_per_delta: number;
}

export function runRedactBench(runs = 15): RedactFigures {
  const secrets: NamedSecret[] = Array.from({ length: 50 }, (_, i) => ({
    name: `providers.p${i}.api_keys[0]`,
    value: randomBytes(12 + (i % 5) * 9).toString("base64url"),
  }));
  const redactor = new Redactor(secrets);
  const words = "the quick brown fox jumps over the lazy dog while 12345 tokens stream by; ".split(" ");
  let text = "";
  let occurrences = 0;
  let n = 0;
  while (text.length < 1_000_000) {
    text += `${words[n++ % words.length]} `;
    if (n % 2000 === 0) {
      text += `${secrets[occurrences % secrets.length]?.value} `;
      occurrences++;
    }
  }
  const whole: number[] = [];
  const stream: number[] = [];
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    const out = redactor.redact(text);
    whole.push(performance.now() - t);
    if (secrets.some((s) => out.includes(s.value))) throw new Error("a secret was left in the text");
    t = performance.now();
    const s = redactor.stream();
    let streamed = "";
    for (let at = 0; at < text.length; at += 4) streamed += s.push(text.slice(at, at + 4));
    streamed += s.end();
    stream.push(performance.now() - t);
    if (streamed !== out) throw new Error("the stream redacted differently from the whole text");
  }
  const deltas = Math.ceil(text.length / 4);
  const streamMs = median(stream);
  return {
    secrets: secrets.length,
    text_bytes: text.length,
    occurrences,
    whole_ms: Number(median(whole).toFixed(2)),
    stream_ms: Number(streamMs.toFixed(2)),
    stream_deltas: deltas,
    stream_ns_per_delta: Math.round((streamMs * 1e6) / deltas),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(runRedactBench());
