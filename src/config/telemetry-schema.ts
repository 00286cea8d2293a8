// The `telemetry` section of config.yaml: where Tenax sends its traces (OpenTelemetry, OTLP/HTTP).
// Without it, the standard OTEL_EXPORTER_OTLP_* variables alone decide; a key set here wins over
// the variable that says the same. Header values are secrets (config/secrets.ts).
import { z } from "zod";
import { flag, httpUrl, text } from "./schema-parts.js";

const headerName = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

export const telemetrySchema = z.strictObject({
  /** false turns exporting off even when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  enabled: flag().optional(),
  /** The collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (`/v1/traces` is added). */
  endpoint: httpUrl.optional(),
  headers: z
    .record(z.string().regex(headerName, { error: "expected an HTTP header name" }), text("a header value"), {
      error: "expected a mapping of HTTP header names (letters, digits, -) to values",
    })
    .optional(),
  service_name: text("a service name").optional(),
});

export type TelemetryConfig = z.infer<typeof telemetrySchema>;
