// Floods a running Tenax server (gateway or dashboard) with sockets that never send a request (a
// third of them send half a request head) and never close their own side, from several attacker
// processes, while one honest client asks for an answer every 250 ms, each time on a new
// connection (as curl or a CLI would); prints what the server did, as one JSON document.
//
//   node scripts/socket-flood.mjs --url http://127.0.0.1:8642 --pid GATEWAY_PID [--key KEY]
//        [--sockets 20000] [--procs 4] [--seconds 60] [--path /v1/models]
//
// The server's open descriptors are read from /proc/PID/fd (Linux). Each attacker process opens
// sockets/procs sockets, so none needs more than its own descriptor limit.
import { fork } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    pid: { type: "string" },
    key: { type: "string" },
    sockets: { type: "string", default: "20000" },
    procs: { type: "string", default: "4" },
    seconds: { type: "string", default: "60" },
    path: { type: "string", default: "/v1/models" },
    worker: { type: "string" },
  },
});

if (values.worker !== undefined) await attack(values.url, Number(values.worker));
else await main();

/** One attacker process: open `count` sockets, hold them, report how many the server closed. */
async function attack(url, count) {
  const { hostname, port } = new URL(url);
  let opened = 0;
  let failed = 0;
  let closedByServer = 0;
  const sockets = [];
  const report = () => {
    if (process.connected) process.send({ opened, failed, closed_by_server: closedByServer });
  };
  const timer = setInterval(report, 500);
  const stop = () => {
    clearInterval(timer);
    report();
    for (const s of sockets) s.destroy();
    setTimeout(() => process.exit(0), 100);
  };
  process.on("message", (m) => m === "stop" && stop());
  process.on("disconnect", stop);
  for (let i = 0; i < count; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, count - i) }, (_, j) => {
        return new Promise((resolve) => {
          // Keeps its own side open when the server ends its side, as a hostile client would.
          const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
          let up = false;
          let ended = false;
          socket.on("error", () => {});
          socket.on("data", () => {});
          socket.once("end", () => {
            ended = true;
            closedByServer++;
          });
          socket.once("connect", () => {
            up = true;
            opened++;
            if ((i + j) % 3 === 0) socket.write("GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n");
            sockets.push(socket);
            resolve();
          });
          socket.once("close", () => {
            if (!up) failed++;
            else if (!ended) closedByServer++;
            resolve();
          });
        });
      }),
    );
  }
  report();
}

/** One request on a connection of its own, as curl or a CLI makes it; resolves with the status. */
function ask(url, path, key) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { agent: false, headers: key ? { authorization: `Bearer ${key}` } : {}, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(Object.assign(new Error("no answer in 10 s"), { code: "TIMEOUT" })));
    req.on("error", reject);
    req.end();
  });
}

function descriptors(pid) {
  const dir = `/proc/${pid}/fd`;
  let all = 0;
  let sockets = 0;
  try {
    for (const fd of readdirSync(dir)) {
      all++;
      try {
        if (readlinkSync(`${dir}/${fd}`).startsWith("socket:")) sockets++;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return null;
  }
  return { all, sockets };
}

async function main() {
  if (values.url === undefined || values.pid === undefined) {
    console.error(
      "usage: node scripts/socket-flood.mjs --url URL --pid PID [--key KEY] [--sockets N] [--procs N] [--seconds S]",
    );
    process.exit(2);
  }
  const procs = Number(values.procs);
  const total = Number(values.sockets);
  const seconds = Number(values.seconds);
  const started = Date.now();
  const before = descriptors(values.pid);
  const workers = Array.from({ length: procs }, () =>
    fork(new URL(import.meta.url).pathname, [
      "--url",
      values.url,
      "--worker",
      String(Math.ceil(total / procs)),
    ]),
  );
  const states = workers.map(() => ({ opened: 0, failed: 0, closed_by_server: 0 }));
  workers.forEach((w, i) => {
    w.on("message", (m) => {
      states[i] = m;
    });
  });

  const client = { ok: 0, failed: 0, errors: {}, latencies: [] };
  let peak = before ?? { all: 0, sockets: 0 };
  const timeline = [];
  const deadline = started + seconds * 1000;
  let nextSample = started;
  while (Date.now() < deadline) {
    const t0 = Date.now();
    try {
      const status = await ask(values.url, values.path, values.key);
      if (status >= 200 && status < 300) {
        client.ok++;
        client.latencies.push(Date.now() - t0);
      } else {
        client.failed++;
        client.errors[`HTTP ${status}`] = (client.errors[`HTTP ${status}`] ?? 0) + 1;
      }
    } catch (error) {
      client.failed++;
      const why = error?.code ?? error?.message ?? String(error);
      client.errors[why] = (client.errors[why] ?? 0) + 1;
    }
    const now = descriptors(values.pid);
    if (now !== null)
      peak = { all: Math.max(peak.all, now.all), sockets: Math.max(peak.sockets, now.sockets) };
    if (Date.now() >= nextSample) {
      const sum = states.reduce(
        (a, s) => ({
          opened: a.opened + s.opened,
          closed_by_server: a.closed_by_server + s.closed_by_server,
        }),
        { opened: 0, closed_by_server: 0 },
      );
      timeline.push({
        t_s: Math.round((Date.now() - started) / 1000),
        fds: now,
        ...sum,
        client_ok: client.ok,
        client_failed: client.failed,
      });
      nextSample += 5_000;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 250 - (Date.now() - t0))));
  }
  for (const w of workers) w.send("stop");
  await new Promise((r) => setTimeout(r, 1_000));
  const sorted = client.latencies.sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? null;
  const attackers = states.reduce(
    (a, s) => ({
      opened: a.opened + s.opened,
      failed_to_connect: a.failed_to_connect + s.failed,
      closed_by_server: a.closed_by_server + s.closed_by_server,
    }),
    { opened: 0, failed_to_connect: 0, closed_by_server: 0 },
  );
  console.log(
    JSON.stringify(
      {
        url: values.url,
        sockets: total,
        procs,
        seconds,
        attackers,
        client: {
          ok: client.ok,
          failed: client.failed,
          errors: client.errors,
          p50_ms: pct(50),
          p99_ms: pct(99),
        },
        server_fds: { before, peak, after: descriptors(values.pid) },
        timeline,
      },
      null,
      2,
    ),
  );
  process.exit(0);
}
