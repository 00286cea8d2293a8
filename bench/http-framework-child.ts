// The framework bench's server, one variant per process (argv[2]: node, fastify or hono), so no
// variant shares an event loop, a heap or a garbage collector with another or with the load
// generator. Prints its origin as one JSON line; SIGTERM closes it.
import { FRAMEWORKS, type Framework, serveFramework } from "./http-framework-app.js";

const kind = process.argv[2] as Framework;
if (!FRAMEWORKS.includes(kind)) {
  process.stderr.write(`usage: http-framework-child.js ${FRAMEWORKS.join("|")} (got ${String(kind)})\n`);
  process.exit(2);
}
const server = await serveFramework(kind);
process.stdout.write(`${JSON.stringify({ url: server.origin })}\n`);
process.on("SIGTERM", () => {
  void server.close().finally(() => process.exit(0));
});
