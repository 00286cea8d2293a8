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
    reason: "unreachable",
    message: "the connection was closed before any answer",
  },
  {
    provider: "transport",
    name: "connection refused names the address and asks whether the provider runs",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "ECONNREFUSED", name: "Error", message: "connect ECONNREFUSED 127.0.0.1:9" },
      endpoint: "http://127.0.0.1:9/v1",
    },
    reason: "unreachable",
    message: "could not connect to http://127.0.0.1:9/v1 (connection refused): is the provider running?",
  },
  {
    provider: "transport",
    name: "a refused endpoint's user and password stay out of the message",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "ECONNREFUSED", name: "Error", message: "connect ECONNREFUSED 10.0.0.5:443" },
      endpoint: "https://alice:hunter2@llm.example.invalid/v1",
    },
    reason: "unreachable",
    message: "could not connect to https://llm.example.invalid/v1 (connection refused)",
    not_in_message: "hunter2",
  },
  {
    provider: "transport",
    name: "a certificate that does not verify is a TLS failure",
    failure: {
      status: null,
      phase: "connect",
      transport: {
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
        name: "Error",
        message: "self-signed certificate",
      },
      endpoint: "https://llm.example.invalid/v1",
    },
    reason: "unreachable",
    message: "(TLS failure: self-signed certificate)",
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
    reason: "unreachable",
    message: "could not connect to the provider (host name not found)",
  },
  {
    provider: "transport",
    name: "broken pipe while sending",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "EPIPE", name: "Error", message: "write EPIPE" },
    },
    reason: "unreachable",
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
    reason: "unreachable",
    message: "AbortError: This operation was aborted",
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
