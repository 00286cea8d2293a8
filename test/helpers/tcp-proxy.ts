// A TCP proxy on 127.0.0.1 in front of a server, that can turn into a black hole: while it is one,
// bytes in both directions are dropped and connections stay open, as on a partitioned network
// (no reset, no refusal, just silence). Closed after the test by whoever started it.
import { connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** Drop every byte (true) or forward them again (false). */
  blackhole(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let dropping = false;
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) =>
    from.on("data", (chunk) => {
      if (!dropping) to.write(chunk);
    });
  const server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    forward(client, upstream);
    forward(upstream, client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");
  return {
    port: address.port,
    blackhole(on) {
      dropping = on;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
