// What redaction by value costs: 1 MB of text with 50 secrets of 16 to 64 characters (a few of
// them in it), redacted whole, as the store does, and as a stream of 4-character deltas, as a
// model's reply goes through the provider boundary; then as tools' output is (redactOutput: whole
// secrets and spread-out runs), whole as the tool layer does and in 64 KiB pieces as a command's
// pipe gives it, with a few secrets spread one character a line in it. Run it with
// `npx tsc -p bench/tsconfig.json && node dist-bench/bench/redact.js`.
import { randomBytes } from "node:crypto";
import { type NamedSecret, Redactor } from "../src/core/redact.js";
import { median } from "./stats.js";

export interface RedactFigures {
  secrets: number;
  text_bytes: number;
  occurrences: number;
  /** Wall time, and the CPU time of this process (less distorted on a busy machine). */
  whole_ms: number;
  whole_cpu_ms: number;
  stream_ms: number;
  stream_cpu_ms: number;
  stream_deltas: number;
  stream_cpu_ns_per_delta: number;
  /** redactOutput of the text whole, and in 64 KiB pieces through outputStream. */
  output_ms: number;
  output_cpu_ms: number;
  output_pieces_cpu_ms: number;
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
  const wholeCpu: number[] = [];
  const stream: number[] = [];
  const streamCpu: number[] = [];
  const cpuMs = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since);
    return (used.user + used.system) / 1000;
  };
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    let cpu = process.cpuUsage();
    const out = redactor.redact(text);
    whole.push(performance.now() - t);
    wholeCpu.push(cpuMs(cpu));
    if (secrets.some((s) => out.includes(s.value))) throw new Error("a secret was left in the text");
    t = performance.now();
    cpu = process.cpuUsage();
    const s = redactor.stream();
    let streamed = "";
    for (let at = 0; at < text.length; at += 4) streamed += s.push(text.slice(at, at + 4));
    streamed += s.end();
    stream.push(performance.now() - t);
    streamCpu.push(cpuMs(cpu));
    if (streamed !== out) throw new Error("the stream redacted differently from the whole text");
  }
  // Tools' output: the same text with a few secrets spread out, one character a line.
  let spread = text;
  for (let k = 1; k <= 5; k++) {
    const at = Math.floor((spread.length * k) / 6);
    spread = `${spread.slice(0, at)}\n${[...(secrets[k]?.value ?? "")].join("\n")}\n${spread.slice(at)}`;
  }
  const output: number[] = [];
  const outputCpu: number[] = [];
  const outputPieces: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    let cpu = process.cpuUsage();
    const out = redactor.redactOutput(spread);
    output.push(performance.now() - t);
    outputCpu.push(cpuMs(cpu));
    if (secrets.slice(1, 6).some((s) => !out.includes(`[redacted:${s.name}]`)))
      throw new Error("a spread-out secret was left in the text");
    cpu = process.cpuUsage();
    const pipe = redactor.outputStream();
    let piped = "";
    for (let at = 0; at < spread.length; at += 65_536) piped += pipe.push(spread.slice(at, at + 65_536));
    piped += pipe.end();
    outputPieces.push(cpuMs(cpu));
    if (secrets.some((s) => piped.includes(s.value))) throw new Error("the pipe let a secret through");
  }
  const deltas = Math.ceil(text.length / 4);
  const streamCpuMs = median(streamCpu);
  return {
    secrets: secrets.length,
    text_bytes: text.length,
    occurrences,
    whole_ms: Number(median(whole).toFixed(2)),
    whole_cpu_ms: Number(median(wholeCpu).toFixed(2)),
    stream_ms: Number(median(stream).toFixed(2)),
    stream_cpu_ms: Number(streamCpuMs.toFixed(2)),
    stream_deltas: deltas,
    stream_cpu_ns_per_delta: Math.round((streamCpuMs * 1e6) / deltas),
    output_ms: Number(median(output).toFixed(2)),
    output_cpu_ms: Number(median(outputCpu).toFixed(2)),
    output_pieces_cpu_ms: Number(median(outputPieces).toFixed(2)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(runRedactBench());
