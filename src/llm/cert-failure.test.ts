// A provider whose TLS certificate does not verify, for real: an HTTPS server on 127.0.0.1 with a
// self-signed certificate made by openssl for this test, called through the real providers (the
// OpenAI wire and the Anthropic SDK) and the router. One handshake only: no retry, no other key,
// and the message names the host and the fix.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { hello, recorder, rejected, runtime, sim } from "../../test/helpers/router.js";
import { tempDir } from "../../test/helpers/tmp.js";

const servers: TlsServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

interface TlsServer {
  url: string;
  host: string;
  /** TCP connections opened to it (one per attempt: the client walks away after the handshake). */
  connections: () => number;
  close: () => Promise<void>;
}

/** An HTTPS server with a fresh self-signed certificate (an EC key: quick to make). */
async function selfSignedServer(): Promise<TlsServer> {
  const dir = tempDir("tenax-tls-");
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "2",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  let connections = 0;
  const server: Server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) => {
    res.writeHead(500).end("a client that verified this certificate should never get here");
  });
  server.on("connection", () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const tls: TlsServer = {
    url: `https://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(tls);
  return tls;
}

describe.skipIf(!hasOpenssl())("a certificate that does not verify", () => {
  it("OpenAI wire: one handshake, no retry, no other key, then the fallback model answers", async () => {
    const tls = await selfSignedServer();
    const backup = await sim();
    const deps = fakeDeps();
    const rt = await runtime(
      {
        model: { provider: "private", name: "big" },
        providers: {
          private: { type: "openai", base_url: `${tls.url}/v1`, api_keys: ["sk-one", "sk-two"] },
          backup: { type: "simulator", base_url: backup.url, api_keys: ["sk-backup"] },
        },
        fallback: [{ provider: "backup", name: "echo" }],
        retry: { max_attempts: 4 },
      },
      deps,
    );
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(tls.connections()).toBe(1);
    expect(deps.delays).toEqual([]);
    // No retry and no rotation: straight to the fallback, which says why.
    expect(rec.types()).toEqual(["fallback"]);
    const [fallback] = rec.status();
    expect(fallback).toMatchObject({ type: "fallback", reason: "ssl_cert_verification" });
    expect(fallback?.message).toContain(`the TLS certificate of ${tls.host} is not accepted`);
    expect(fallback?.message).toContain("NODE_EXTRA_CA_CERTS");
    // Neither key is blamed: both stay usable.
    const keys = await rt.router.runtime("private").pool.state(deps.clock.now());
    expect(keys.map((k) => k.status)).toEqual(["ok", "ok"]);
  });

  it("Anthropic SDK: one handshake, and with no fallback the failure says the host and the fix", async () => {
    const tls = await selfSignedServer();
    const rt = await runtime({
      model: { provider: "claude", name: "claude-test" },
      providers: { claude: { type: "anthropic", base_url: tls.url, api_keys: ["sk-ant-one", "sk-ant-two"] } },
      retry: { max_attempts: 4 },
    });
    const rec = recorder();
    const error = await rejected(rt.router.turn().complete(hello, { onEvent: rec.onEvent }));
    expect(error.classified).toMatchObject({
      reason: "ssl_cert_verification",
      retryable: false,
      rotate_credential: false,
    });
    expect(error.classified.message).toContain(tls.host);
    expect(error.classified.message).toMatch(/DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED/);
    expect(error.data.give_up).toBe("not_retryable");
    expect(tls.connections()).toBe(1);
    expect(rec.types()).toEqual([]);
  });
});
