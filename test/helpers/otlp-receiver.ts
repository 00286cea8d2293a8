// An OTLP/HTTP trace receiver for tests: a real HTTP server on 127.0.0.1 that takes what the
// official JSON exporter POSTs to /v1/traces and decodes it into flat spans (ids, parent, name,
// attributes, events, resource). `mode` makes it a collector that hangs (takes the request and never
// answers). Closed after each test.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";

export type AttrValue = string | number | boolean | AttrValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: number;
  attributes: Record<string, AttrValue>;
  events: { name: string; attributes: Record<string, AttrValue> }[];
  status: number;
  resource: Record<string, AttrValue>;
}

export interface OtlpReceiver {
  /** The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans(): ReceivedSpan[];
  /** Every request body as it came (to look for what must never be there). */
  raw(): string[];
  /** Requests begun, answered or not. */
  requests(): number;
  close(): Promise<void>;
}

const open: Server[] = [];
afterEach(async () => {
  await Promise.all(
    open.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

interface OtlpAttr {
  key: string;
  value: OtlpValue;
}
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

function value(v: OtlpValue): AttrValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(value);
  return null;
}

function attrs(list: OtlpAttr[] | undefined): Record<string, AttrValue> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
}

interface OtlpBody {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttr[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttr[];
        events?: { name: string; attributes?: OtlpAttr[] }[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function decode(body: OtlpBody): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const resource = attrs(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ? s.parentSpanId : null,
        name: s.name,
        kind: s.kind,
        attributes: attrs(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
        status: s.status?.code ?? 0,
        resource,
      })),
    );
  });
}

export async function startOtlpReceiver(mode: "answer" | "hang" = "answer"): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  let requests = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    if (mode === "hang") return; // Taken, never answered.
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      raw.push(text);
      if (req.url !== "/v1/traces" || !String(req.headers["content-type"]).includes("json")) {
        res.writeHead(415).end();
        return;
      }
      spans.push(...decode(JSON.parse(text) as OtlpBody));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  open.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    raw: () => [...raw],
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
