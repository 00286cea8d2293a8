// A TraceSink that keeps every span in memory (name, parent, attributes, events, error, ended), for
// in-process tests of what each layer puts in its spans; removed after each test.
import { afterEach } from "vitest";
import {
  installTraceSink,
  type TraceAttributes,
  type TraceSink,
  type TraceSpan,
} from "../../src/core/trace.js";

export interface RecordedSpan extends TraceSpan {
  name: string;
  parent: RecordedSpan | null;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  error: string | null;
  ended: boolean;
}

afterEach(() => installTraceSink(null));

export function recordTraces(): { spans: RecordedSpan[]; named(name: string): RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  const sink: TraceSink = {
    start(name, _kind, attributes: TraceAttributes, parent) {
      const span: RecordedSpan = {
        name,
        parent: (parent as RecordedSpan | null) ?? null,
        attributes: { ...attributes },
        events: [],
        error: null,
        ended: false,
        set: (more) => Object.assign(span.attributes, more),
        event: (eventName, more = {}) => span.events.push({ name: eventName, attributes: { ...more } }),
        fail: (type) => {
          span.error = type;
        },
        end: () => {
          span.ended = true;
        },
      };
      spans.push(span);
      return span;
    },
  };
  installTraceSink(sink);
  return { spans, named: (name) => spans.filter((s) => s.name === name) };
}
