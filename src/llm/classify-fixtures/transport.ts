// Transport and aborts: rows for the classifier's table-driven test.
import type { FixtureRow } from "./shared.js";

export const transportRows: readonly FixtureRow[] = [
  {
    provider: "transport",
    name: "reset before headers",
    failure: {
      status: null,
      phase: "headers",
      transport: { code: "ECONNRESET", name: "Error", message: "socket hang up" },
    },
    reason: "server_error",
  },
  {
    provider: "transport",
    name: "reset mid-stream",
    failure: {
      status: 200,
      phase: "stream",
      transport: { code: "ECONNRESET", name: "Error", message: "terminated" },
    },
    reason: "stream_drop",
  },
  {
    provider: "transport",
    name: "socket error after a 200, phase not given",
    failure: {
      status: 200,
      transport: { code: "UND_ERR_SOCKET", name: "SocketError", message: "other side closed" },
    },
    reason: "stream_drop",
  },
  {
    provider: "transport",
    name: "DNS failure",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "ENOTFOUND", name: "Error", message: "getaddrinfo ENOTFOUND api.example.invalid" },
    },
    reason: "server_error",
  },
  {
    provider: "transport",
    name: "broken pipe while sending",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "EPIPE", name: "Error", message: "write EPIPE" },
    },
    reason: "server_error",
  },
  {
    provider: "transport",
    name: "our connect timeout (AbortSignal.timeout)",
    failure: {
      status: null,
      phase: "connect",
      transport: { name: "TimeoutError", message: "The operation was aborted due to timeout" },
    },
    reason: "timeout",
  },
  {
    provider: "transport",
    name: "first-byte timeout (undici headers timeout)",
    failure: {
      status: null,
      phase: "headers",
      transport: {
        code: "UND_ERR_HEADERS_TIMEOUT",
        name: "HeadersTimeoutError",
        message: "Headers Timeout Error",
      },
    },
    reason: "timeout",
  },
  {
    provider: "transport",
    name: "idle timeout between chunks is a stream drop",
    failure: {
      status: 200,
      phase: "stream",
      transport: { code: "UND_ERR_BODY_TIMEOUT", name: "BodyTimeoutError", message: "Body Timeout Error" },
    },
    reason: "stream_drop",
  },
  {
    provider: "transport",
    name: "our abort: nothing to retry, even with a retry-after header",
    failure: {
      status: 429,
      headers: { "retry-after": "5" },
      aborted: true,
      transport: { name: "AbortError", message: "This operation was aborted" },
    },
    reason: "aborted",
  },
  {
    provider: "transport",
    name: "an AbortError we did not ask for is a torn connection",
    failure: {
      status: null,
      phase: "headers",
      transport: { name: "AbortError", message: "This operation was aborted" },
    },
    reason: "server_error",
  },
  {
    provider: "transport",
    name: "bad JSON in a 200 stream",
    failure: {
      status: 200,
      phase: "stream",
      transport: { name: "SyntaxError", message: 'Unexpected token \'d\', "data: {"ch" is not valid JSON' },
    },
    reason: "format_error",
  },
  {
    provider: "transport",
    name: "a 200 whose body is not JSON",
    failure: { status: 200, body: "<html>maintenance</html>" },
    reason: "format_error",
  },
];
