// Server-sent events read back from a byte stream (the chat route's answer, called in-process):
// each event's name and data, comments skipped, whatever way the bytes were cut.
import { StringDecoder } from "node:string_decoder";

export interface SseEvent {
  event: string | null;
  data: string;
}

export async function* readSse(stream: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const decoder = new StringDecoder("utf8");
  let buffer = "";
  for await (const chunk of stream) {
    buffer += typeof chunk === "string" ? chunk : decoder.write(chunk);
    buffer = buffer.replace(/\r\n?/g, "\n");
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
      end = buffer.indexOf("\n\n");
    }
  }
  const last = parseEvent(buffer + decoder.end());
  if (last) yield last;
}

function parseEvent(block: string): SseEvent | null {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    if (field === "data") data.push(value);
  }
  return data.length === 0 ? null : { event, data: data.join("\n") };
}
