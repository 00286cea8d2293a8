// Tenax's one tracing seam: spans with attributes and events, nested by the async context they
// start in. Off (the default) every call is a no-op on one shared span; the OpenTelemetry SDK plugs
// in as a TraceSink at process start (core/trace-start.ts, loaded only when telemetry is on).
// Spans carry ids, names, counts and reasons: never a prompt, a reply, a tool's output or a secret.
import { AsyncLocalStorage } from "node:async_hooks";

export type TraceValue = string | number | boolean | readonly string[];
/** Attributes by their OpenTelemetry names; null and undefined values are left out. */
export type TraceAttributes = Readonly<Record<string, TraceValue | null | undefined>>;

export interface TraceSpan {
  set(attributes: TraceAttributes): void;
  event(name: string, attributes?: TraceAttributes): void;
  /** The span failed: `errorType` is a short code (a classified reason), never free text. */
  fail(errorType: string): void;
  end(): void;
}

export type SpanKind = "internal" | "client";

/** Where spans go: the OpenTelemetry adapter, or a test's recorder. */
export interface TraceSink {
  start(name: string, kind: SpanKind, attributes: TraceAttributes, parent: TraceSpan | null): TraceSpan;
}

export interface StartOptions {
  kind?: SpanKind;
  /** Only as part of a trace already started: nothing when no span is active (a store commit). */
  childOnly?: boolean;
  /**
   * A child only of an active span whose name starts with this, else the root of a trace of its
   * own: a turn nests under the tool that started it (a subagent), never under another turn whose
   * event or continuation happened to start it.
   */
  nestOnlyUnder?: string;
}

const NOOP_SPAN: TraceSpan = {
  set: () => {},
  event: () => {},
  fail: () => {},
  end: () => {},
};

let sink: TraceSink | null = null;
const active = new AsyncLocalStorage<TraceSpan>();
/** Each live span's name, for `nestOnlyUnder`. */
const names = new WeakMap<TraceSpan, string>();

/** Set (or, with null, remove) where spans go; once per process, at its start. */
export function installTraceSink(next: TraceSink | null): void {
  sink = next;
}

export function tracingOn(): boolean {
  return sink !== null;
}

/** A span, child of the one active where it is started; the no-op span while tracing is off. */
export function startSpan(
  name: string,
  attributes: TraceAttributes = {},
  options: StartOptions = {},
): TraceSpan {
  if (sink === null) return NOOP_SPAN;
  let parent = active.getStore() ?? null;
  if (parent === null && options.childOnly === true) return NOOP_SPAN;
  const under = options.nestOnlyUnder;
  if (parent !== null && under !== undefined && !(names.get(parent) ?? "").startsWith(under)) parent = null;
  try {
    const span = sink.start(name, options.kind ?? "internal", attributes, parent);
    names.set(span, name);
    return span;
  } catch {
    // Tracing never breaks what it watches.
    return NOOP_SPAN;
  }
}

/** The span active here (the no-op span when none is): for code that only adds to it. */
export function currentSpan(): TraceSpan {
  return (sink === null ? undefined : active.getStore()) ?? NOOP_SPAN;
}

/**
 * Run `fn` outside every span: for what starts shared background work (a scheduler's one timer),
 * which would otherwise carry the span active when it was armed into every later job.
 */
export function outsideSpans<T>(fn: () => T): T {
  if (sink === null) return fn();
  return active.exit(fn);
}

/** Run `fn` with `span` as the parent of the spans started inside it (across awaits). */
export function withSpan<T>(span: TraceSpan, fn: () => T): T {
  if (span === NOOP_SPAN) return fn();
  return active.run(span, fn);
}

/**
 * Run `fn` in a new span that ends when it settles; a rejection marks it failed with
 * `errorType(error)` (the error's code by default) and is passed on unchanged.
 */
export async function traced<T>(
  name: string,
  attributes: TraceAttributes,
  fn: (span: TraceSpan) => Promise<T>,
  options: StartOptions & { errorType?: (error: unknown) => string } = {},
): Promise<T> {
  const span = startSpan(name, attributes, options);
  if (span === NOOP_SPAN) return fn(span);
  try {
    return await withSpan(span, () => fn(span));
  } catch (error) {
    span.fail((options.errorType ?? errorCode)(error));
    throw error;
  } finally {
    span.end();
  }
}

/** A short, stable name for an error: its code when it has one, else its class name. */
export function errorCode(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return code;
    if (error instanceof Error) return error.name;
  }
  return "error";
}
