// The OpenTelemetry adapter of the tracing seam (core/trace.ts): Tenax spans become SDK spans,
// batched off the turn's path and sent over OTLP/HTTP (JSON) by the official exporter. Loaded only
// when telemetry is on (core/trace-start.ts imports it lazily), so a Tenax without it pays nothing.
// A collector that refuses, hangs or is slow costs the turn nothing: ending a span only queues it
// (bounded; past the bound it is dropped and counted), and each export has its own deadline.
import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { TraceAttributes, TraceSink, TraceSpan } from "./trace.js";
import type { TelemetryCounts, TracingOptions } from "./trace-start.js";

type ExportCallback = Parameters<SpanExporter["export"]>[1];
type ExportResult = Parameters<ExportCallback>[0];
/** ExportResultCode.SUCCESS of @opentelemetry/core, which Tenax does not depend on directly. */
const EXPORT_SUCCESS = 0;

class OtelSpan implements TraceSpan {
  constructor(readonly span: Span) {}
  set(attributes: TraceAttributes): void {
    this.span.setAttributes(clean(attributes));
  }
  event(name: string, attributes: TraceAttributes = {}): void {
    this.span.addEvent(name, clean(attributes));
  }
  fail(errorType: string): void {
    this.span.setAttribute("error.type", errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
  }
  end(): void {
    this.span.end();
  }
}

function clean(attributes: TraceAttributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined) continue;
    out[key] = Array.isArray(value)
      ? [...(value as readonly string[])]
      : (value as string | number | boolean);
  }
  return out;
}

/** Counts what left and what was lost, by the same rule the batch processor drops by. */
class Counter {
  readonly counts: TelemetryCounts = { exported: 0, dropped: 0, failed_exports: 0 };
  /** Spans ended and not yet handed to the exporter: the batch processor's queue. */
  queued = 0;
  /** Spans handed to the exporter whose export has not ended. */
  inFlight = 0;
  failing = false;
}

class CountingProcessor implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly counter: Counter,
    private readonly maxQueue: number,
  ) {}
  onStart(...args: Parameters<SpanProcessor["onStart"]>): void {
    this.inner.onStart(...args);
  }
  onEnd(span: ReadableSpan): void {
    if (this.counter.queued >= this.maxQueue) this.counter.counts.dropped++;
    else this.counter.queued++;
    this.inner.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly counter: Counter,
    private readonly report: (line: string) => void,
    private readonly where: string,
  ) {}
  export(spans: ReadableSpan[], done: ExportCallback): void {
    const { counter } = this;
    counter.queued = Math.max(0, counter.queued - spans.length);
    counter.inFlight += spans.length;
    this.inner.export(spans, (result: ExportResult) => {
      counter.inFlight -= spans.length;
      if (result.code === EXPORT_SUCCESS) {
        counter.counts.exported += spans.length;
        if (counter.failing) this.report(`telemetry: exporting traces to ${this.where} works again`);
        counter.failing = false;
      } else {
        counter.counts.dropped += spans.length;
        counter.counts.failed_exports++;
        // Said once per outage, not once per batch.
        if (!counter.failing)
          this.report(
            `telemetry: could not export traces to ${this.where} (${result.error?.message ?? "export failed"}); their spans are dropped and counted until it answers again`,
          );
        counter.failing = true;
      }
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

export interface OtelTracing {
  sink: TraceSink;
  counts(): TelemetryCounts;
  shutdown(timeoutMs: number): Promise<boolean>;
}

export function createOtelTracing(options: TracingOptions): OtelTracing {
  const counter = new Counter();
  const exporter = new CountingExporter(
    new OTLPTraceExporter({
      ...(options.url === null ? {} : { url: options.url }),
      ...(options.headers === null ? {} : { headers: { ...options.headers } }),
      timeoutMillis: options.exportTimeoutMs,
    }),
    counter,
    options.report,
    options.where,
  );
  const batch = new BatchSpanProcessor({
    exporter,
    maxQueueSize: options.maxQueueSize,
    maxExportBatchSize: Math.min(options.maxExportBatchSize, options.maxQueueSize),
    scheduledDelayMillis: options.scheduleDelayMs,
    exportTimeoutMillis: options.exportTimeoutMs,
  });
  // Lowest first: the SDK's defaults, `tenax`, OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME,
  // then telemetry.service_name in config.yaml.
  const resource = resourceFromAttributes({ "service.name": "tenax", "service.version": options.version })
    .merge(resourceFromAttributes(envDetector.detect().attributes ?? {}))
    .merge(
      options.serviceName === null ? null : resourceFromAttributes({ "service.name": options.serviceName }),
    );
  const provider = new TracerProvider({
    resource,
    spanProcessors: [new CountingProcessor(batch, counter, options.maxQueueSize)],
  });
  const tracer = provider.getTracer("tenax", options.version);
  /** True once a shutdown gave up waiting: what was still queued then is lost with the process. */
  let shutdownLeft = false;
  const sink: TraceSink = {
    start(name, kind, attributes, parent) {
      const parentContext =
        parent instanceof OtelSpan ? trace.setSpan(context.active(), parent.span) : context.active();
      const span = tracer.startSpan(
        name,
        {
          kind: kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
          attributes: clean(attributes),
          // A span without a Tenax parent starts a trace of its own.
          root: !(parent instanceof OtelSpan),
        },
        parentContext,
      );
      return new OtelSpan(span);
    },
  };
  return {
    sink,
    // Once a stop gave up waiting, what is still queued or being sent is lost with the process.
    counts: () => ({
      ...counter.counts,
      dropped: counter.counts.dropped + (shutdownLeft ? counter.queued + counter.inFlight : 0),
    }),
    async shutdown(timeoutMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref();
      });
      const flushed = provider.shutdown().then(
        () => true,
        () => false,
      );
      const done = await Promise.race([flushed, bound]);
      clearTimeout(timer);
      shutdownLeft = !done;
      return done;
    },
  };
}
