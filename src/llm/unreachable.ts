// The words for an endpoint that never answered (refused, DNS, TLS, reset before the headers):
// which address, what went wrong in plain terms, and the question to ask, instead of a bare errno.
// And for a call that never left this machine (out of file descriptors): whose fault that is.

/** What a transport code means, and what to check; matched on the lower-cased code. */
const CAUSES: readonly { codes: readonly string[]; what: string; check: string }[] = [
  { codes: ["econnrefused"], what: "connection refused", check: "is the provider running?" },
  {
    codes: ["enotfound", "eai_again", "eai_noname", "eai_fail"],
    what: "host name not found",
    check: "is the host name in base_url right, and does DNS answer?",
  },
  {
    codes: ["ehostunreach", "enetunreach", "enetdown", "ehostdown", "eaddrnotavail"],
    what: "no route to the host",
    check: "is the network up and the address in base_url right?",
  },
  {
    codes: ["econnreset", "epipe", "econnaborted", "und_err_socket", "und_err_closed"],
    what: "the connection was closed before any answer",
    check: "is the provider running, and is base_url its HTTP(S) address?",
  },
];

const TLS =
  /^(?:err_tls_|err_ssl_|cert_|unable_to_(?:get|verify)|depth_zero_self_signed|self_signed_cert|hostname_mismatch|err_ossl)/;

/**
 * "could not connect to http://127.0.0.1:9 (connection refused): is the provider running?"
 * `endpoint` is the provider's base URL when the caller knows it.
 */
export function unreachableMessage(
  transport: { code?: string | undefined; name?: string | undefined; message: string },
  endpoint: string | null | undefined,
): string {
  const shown = endpoint ? withoutUserInfo(endpoint) : null;
  const where = shown ? `could not connect to ${shown}` : "could not connect to the provider";
  // Read defensively: the classifier never throws, whatever shape a transport error came in.
  const code = typeof transport.code === "string" ? transport.code.toLowerCase() : "";
  const message = typeof transport.message === "string" ? transport.message : "";
  const known = CAUSES.find((c) => c.codes.includes(code));
  if (known) return `${where} (${known.what}): ${known.check}`;
  if (TLS.test(code))
    return `${where} (TLS failure: ${message}): does base_url use the right scheme, and does its certificate verify?`;
  const label = code === "" ? (typeof transport.name === "string" ? transport.name : "") : transport.code;
  const detail = label && !message.includes(label) ? `${label}: ${message}` : message;
  return `${where} (${detail || "no answer"}): is the provider running, and is base_url right?`;
}

/** What a certificate failure means and what fixes it, by the lower-cased code Node gives it. */
const CERTIFICATE: readonly { codes: RegExp; what: string; fix: string }[] = [
  {
    codes:
      /^(?:cert_has_expired|cert_not_yet_valid|crl_has_expired|crl_not_yet_valid|error_in_cert_not_(?:before|after)_field)$/,
    what: "it is outside its validity dates",
    fix: "check this machine's clock (date -u); if it is right, the server must renew its certificate",
  },
  {
    codes: /^(?:err_tls_cert_altname_invalid|err_tls_cert_altname_format|hostname_mismatch)$/,
    what: "it is not for this host name",
    fix: "put in base_url the host name the certificate names, or have it issued for this name",
  },
  {
    codes:
      /^(?:depth_zero_self_signed_cert|self_signed_cert_in_chain|unable_to_get_issuer_cert|unable_to_get_issuer_cert_locally|unable_to_verify_leaf_signature|cert_untrusted|invalid_ca)$/,
    what: "it is signed by a CA this machine does not trust",
    fix: "for a private CA, set NODE_EXTRA_CA_CERTS=/path/to/ca.pem for Tenax and restart it; else the server must send its full chain",
  },
];

/**
 * "the TLS certificate of llm.internal:8443 is not accepted: it is signed by a CA this machine
 * does not trust (DEPTH_ZERO_SELF_SIGNED_CERT); for a private CA, set NODE_EXTRA_CA_CERTS=...".
 * Every retry meets the same certificate, so the message says what to fix, and where, first.
 */
export function certificateMessage(
  transport: { code?: string | undefined; message: string },
  endpoint: string | null | undefined,
): string {
  const code = typeof transport.code === "string" ? transport.code : "";
  const message = typeof transport.message === "string" ? transport.message : "";
  const known = CERTIFICATE.find((c) => c.codes.test(code.toLowerCase()));
  const where = `the TLS certificate of ${hostOf(endpoint)} is not accepted`;
  if (known) return `${where}: ${known.what} (${code}); ${known.fix}`;
  return `${where} (${code === "" ? message : `${code}: ${message}`}): check this machine's clock, the host name in base_url, and for a private CA NODE_EXTRA_CA_CERTS`;
}

/** host:port of a base URL, for the messages that name the server. */
function hostOf(endpoint: string | null | undefined): string {
  if (!endpoint) return "the provider";
  try {
    return new URL(endpoint).host;
  } catch {
    return withoutUserInfo(endpoint);
  }
}

/** What each local refusal means, and its fix: the process's or the machine's, never the provider's. */
const LOCAL: Readonly<Record<string, { what: string; fix: string }>> = {
  emfile: {
    what: "Tenax's own process is out of file descriptors (EMFILE)",
    fix: "raise its open-file limit (ulimit -n, LimitNOFILE=) and see what holds connections open (ls /proc/PID/fd)",
  },
  enfile: {
    what: "this machine is out of file descriptors (ENFILE)",
    fix: "find the process holding them (lsof) or raise fs.file-max",
  },
  enobufs: {
    what: "this machine is out of memory for sockets (ENOBUFS)",
    fix: "look at memory and the open connections (ss -s) on this machine",
  },
  enomem: {
    what: "this machine is out of memory for sockets (ENOMEM)",
    fix: "look at memory and the open connections (ss -s) on this machine",
  },
};

/**
 * "Tenax's own process is out of file descriptors (EMFILE) while connecting to URL: the provider
 * was not reached and is not at fault; raise its open-file limit ...".
 */
export function localResourcesMessage(
  transport: { code?: string | undefined; message: string },
  endpoint: string | null | undefined,
): string {
  const code = typeof transport.code === "string" ? transport.code.toLowerCase() : "";
  const local = LOCAL[code] ?? {
    what: `this machine refused a socket (${transport.code ?? transport.message})`,
    fix: "look at the process's open files and the machine's memory",
  };
  const where = endpoint ? `connecting to ${withoutUserInfo(endpoint)}` : "connecting to the provider";
  return `${local.what} while ${where}: the provider was not reached and is not at fault; ${local.fix}`;
}

/** A base URL may carry a user and password; the message names the address only. */
function withoutUserInfo(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    if (url.username === "" && url.password === "") return endpoint;
    url.username = "";
    url.password = "";
    return url.toString();
  } catch {
    return endpoint.replace(/\/\/[^/@]*@/, "//");
  }
}
