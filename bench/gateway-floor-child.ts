// The gateway bench's floor: the least any Node.js gateway can add on this machine. It passes each
// request to the simulator and the answer back as bytes, over the same undici pool and Node HTTP
// server a real gateway uses, and does nothing else (no parsing, no storing, no logging). What a
// gateway adds beyond this row is its own work; what this row adds is the extra hop itself.
// argv[2] is the simulator's base URL; prints its own URL as one JSON line; SIGTERM closes it.
import { createServer } from "node:http";
import { Pool } from "undici";

const upstream = new URL(process.argv[2] ?? "");
const path = `${upstream.pathname.replace(/\/+$/, "")}/chat/completions`;
const pool = new Pool(upstream.origin, { connections: 1024 });

const server = createServer((req, res) => {
  const fail = (error: unknown) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(error));
  };
  pool
    .request({
      method: "POST",
      path,
      headers: { "content-type": req.headers["content-type"] ?? "application/json" },
      body: req,
    })
    .then((answer) => {
      res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"] ?? "") });
      answer.body.on("error", fail).pipe(res);
    }, fail);
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no address");
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}` })}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  void pool.close().finally(() => process.exit(0));
});
