// A child's output stream into its bounded buffer, with the profile's secrets redacted on the way
// in: the buffer keeps a head and a tail and polls read from any byte, so redacting later could
// meet a secret cut in two. A secret split across two chunks of the pipe is still caught, and so
// is one spread out or cut up (Redactor.redactOutput): a poll never sees what the buffer never got.

import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { Redactor } from "../core/redact.js";
import type { OutputBuffer } from "./output-buffer.js";

export function pipeOutput(stream: Readable | null, buffer: OutputBuffer, redactor: Redactor): void {
  if (stream === null) return;
  if (redactor.size === 0) {
    stream.on("data", (chunk: Buffer) => buffer.write(chunk));
    return;
  }
  const decoder = new StringDecoder("utf8");
  const text = redactor.outputStream();
  const write = (s: string) => {
    if (s !== "") buffer.write(Buffer.from(s, "utf8"));
  };
  stream.on("data", (chunk: Buffer) => write(text.push(decoder.write(chunk))));
  // "end" comes before the child's "close", which a foreground call waits for: nothing held is lost.
  stream.once("end", () => write(text.push(decoder.end()) + text.end()));
  // A pipe destroyed before its end (settle gave up on it) still gives what it held.
  stream.once("close", () => write(text.end()));
}
