// An address a server cannot open is the setting that gave it, told by a real `tenax gateway run`
// and `tenax dashboard` (the built CLI): a gateway.host that does not resolve or is not this
// machine's is a config error at its file, line and key, exit 78 (the service unit and tenax up do
// not restart it), found before anything starts; the same host as --host is a usage error naming
// the flag; a port in use says where the port was set. Never "a bug in Tenax" with a stack. A
// dashboard off loopback is refused only without a login (auth mode none); with one (token, the
// default) it serves, and warns that plain HTTP carries the login in the clear.
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { networkInterfaces } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { runToEnd, startListening } from "./helpers/listening.js";
import { rawRequest } from "./helpers/raw-http.js";
import { profileWith } from "./helpers/temp-home.js";

// An empty label: no resolver takes it, so it fails the same way with or without a name server.
const UNRESOLVED = "gateway..invalid";
// TEST-NET-1 (RFC 5737): never an address of this machine.
const NOT_LOCAL = "192.0.2.1";
// An address of this machine off loopback, where a dashboard bound to 0.0.0.0 is reached from the network.
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a?.family === "IPv4" && !a.internal)?.address;

const holders: Server[] = [];
afterEach(async () => {
  for (const server of holders.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
});

function profile(section: string) {
  // Line 1 a comment, so the line named is the key's own and not the top of the file.
  return profileWith(`# test profile\nmodel: { provider: simulator, name: echo }\n${section}`);
}

function expectNoBug(output: string) {
  expect(output).not.toContain("a bug in Tenax");
  expect(output).not.toMatch(/^\s+at /m);
}

describe("tenax gateway run on an address it cannot open", () => {
  it("a gateway.host that does not resolve is a config error at its line, exit 78, before anything starts", async () => {
    requireBuild();
    const paths = profile(`gateway:\n  port: 8642\n  host: ${UNRESOLVED}\n`);
    const run = await runToEnd(paths.home, ["gateway", "run", "--port", "0"]);
    expectNoBug(run.output);
    expect(run.output).toContain(
      `config error: ${paths.config}:5: gateway.host: "${UNRESOLVED}" does not resolve to any address (ENOTFOUND)`,
    );
    expect(run.output).toMatch(/give an address of this machine: 127\.0\.0\.1/);
    expect(run.status).toBe(78);
    // Nothing was opened or written: no store, no pid file, no key.
    expect(existsSync(paths.state)).toBe(false);
    expect(existsSync(paths.pid)).toBe(false);
    expect(run.output).not.toContain("clean-shutdown");
  });

  it("a gateway.host that is not an address of this machine is a config error at its line, exit 78", async () => {
    requireBuild();
    const paths = profile(`gateway: { host: "${NOT_LOCAL}" }\n`);
    const run = await runToEnd(paths.home, ["gateway", "run", "--port", "0"]);
    expectNoBug(run.output);
    expect(run.output).toContain(
      `config error: ${paths.config}:3: gateway.host: "${NOT_LOCAL}" is not an address of this machine, so nothing can listen on it (EADDRNOTAVAIL)`,
    );
    expect(run.status).toBe(78);
    expect(existsSync(paths.state)).toBe(false);
  });

  it("the same host given as --host is a usage error naming the flag, exit 2", async () => {
    requireBuild();
    const paths = profile("");
    const run = await runToEnd(paths.home, ["gateway", "run", "--host", NOT_LOCAL, "--port", "0"]);
    expectNoBug(run.output);
    expect(run.output).toContain(`error: --host: "${NOT_LOCAL}" is not an address of this machine`);
    expect(run.output).not.toContain("config error");
    expect(run.status).toBe(2);
  });

  it("a port in use says where the port was set, and stays an exit the service restarts (1)", async () => {
    requireBuild();
    const holder = createServer();
    holders.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    const paths = profile(`gateway:\n  host: 127.0.0.1\n  port: ${port}\n`);
    const fromConfig = await runToEnd(paths.home, ["gateway", "run"]);
    expectNoBug(fromConfig.output);
    expect(fromConfig.output).toContain(
      `error: port ${port} on 127.0.0.1 is already in use (gateway.port at ${paths.config}:5)`,
    );
    expect(fromConfig.status).toBe(1);
    const fromFlag = await runToEnd(paths.home, ["gateway", "run", "--port", String(port)]);
    expect(fromFlag.output).toContain(`error: port ${port} on 127.0.0.1 is already in use (given as --port)`);
    expect(fromFlag.status).toBe(1);
  });
});

describe("tenax dashboard on an address it cannot open", () => {
  it("a dashboard.host that does not resolve is a config error at its line, not a refusal to serve", async () => {
    requireBuild();
    const paths = profile(`dashboard:\n  host: ${UNRESOLVED}\n`);
    const run = await runToEnd(paths.home, ["dashboard", "--port", "0"]);
    expectNoBug(run.output);
    expect(run.output).toContain(
      `config error: ${paths.config}:4: dashboard.host: "${UNRESOLVED}" does not resolve to any address (ENOTFOUND)`,
    );
    expect(run.output).not.toContain("refusing to serve");
    expect(run.status).toBe(1);
  });

  it("a dashboard.host that is not loopback in auth mode none is refused at its line in the file, and as --host", async () => {
    requireBuild();
    const paths = profile("dashboard: { host: 0.0.0.0, auth: { mode: none } }\n");
    const run = await runToEnd(paths.home, ["dashboard", "--port", "0"]);
    expectNoBug(run.output);
    expect(run.output).toContain(
      `config error: ${paths.config}:3: dashboard.host: refusing to serve the dashboard on 0.0.0.0 with dashboard.auth.mode none`,
    );
    expect(run.output).toMatch(/leave dashboard\.auth\.mode at token \(the default\)/);
    expect(run.output).not.toContain("listening on");
    expect(run.status).toBe(1);
    // Refused before anything is opened: no store.
    expect(existsSync(paths.state)).toBe(false);

    const fromFlag = await runToEnd(profile("dashboard: { auth: { mode: none } }\n").home, [
      "dashboard",
      "--host",
      "0.0.0.0",
      "--port",
      "0",
    ]);
    expectNoBug(fromFlag.output);
    expect(fromFlag.output).toMatch(
      /^error: refusing to serve the dashboard on 0\.0\.0\.0 with dashboard\.auth\.mode none/m,
    );
    expect(fromFlag.output).not.toContain("listening on");
    expect(fromFlag.status).toBe(2);
  });

  it("a dashboard.host that is not loopback in token mode (the default) serves behind the login, and warns of plain HTTP", async () => {
    requireBuild();
    const paths = profile("dashboard: { host: 0.0.0.0 }\n");
    const dashboard = await startListening(paths.home, ["dashboard", "--port", "0"], "dashboard");
    const port = Number(new URL(dashboard.url).port);
    expect(dashboard.url).toBe(`http://0.0.0.0:${port}`);
    expect(dashboard.stderr()).toContain(
      "warning: the dashboard serves on 0.0.0.0 over plain HTTP: a login link or cookie sent across a network can be read on the way",
    );
    expect(dashboard.stderr()).toMatch(/behind a reverse proxy with TLS and set dashboard\.public_url/);
    // The printed link is made on loopback, and it logged in (the helper opened it).
    expect(dashboard.login?.link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/auth/link\\?token=`));
    const local = `http://127.0.0.1:${port}`;
    const ask = (host: string, headers: Record<string, string> = {}) =>
      rawRequest(local, "GET", "/api/sessions", { headers: { ...headers, host } });
    const names = [`127.0.0.1:${port}`, ...(external === undefined ? [] : [`${external}:${port}`])];
    for (const host of names) {
      const without = await ask(host);
      expect([host, without.status]).toEqual([host, 401]);
      expect(JSON.parse(without.body)).toMatchObject({ error: { code: "login_required" } });
      expect([host, (await ask(host, dashboard.auth)).status]).toEqual([host, 200]);
    }
    expect((await ask(`attacker.test:${port}`, dashboard.auth)).status).toBe(403);
  });
});

describe("tenax doctor on a host nothing can listen on", () => {
  it("names the host, not another process holding the port", async () => {
    requireBuild();
    const paths = profile(
      `gateway: { host: "${NOT_LOCAL}", port: ${await freePort()} }\ndashboard: { port: ${await freePort()} }\n`,
    );
    const run = await runToEnd(paths.home, ["doctor"]);
    expect(run.output).toMatch(
      new RegExp(
        `fail +ports +gateway\\.host: "${NOT_LOCAL.replaceAll(".", "\\.")}" is not an address of this machine`,
      ),
    );
    expect(run.output).not.toContain("held by another process");
    expect(run.output).toContain(
      `next (ports): set the host in ${paths.config} to an address of this machine`,
    );
  });
});
