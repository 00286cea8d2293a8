// What keeps a flood of idle sockets from taking a server down (gateway, dashboard, simulator alike).
// Node's own timers do the timing, set here from one set of limits: a connection that sends no
// complete request head within headersTimeout of arriving (or of the first byte of its next
// request) is answered 408 and closed (answerClientError closes it outright, never half-open);
// requestTimeout bounds receiving a request, never sending its answer, so a long stream is safe;
// keepAliveTimeout closes a connection idle after an answer (Node adds a second to it, so a client
// told the timeout never races the close); the check runs every
// `sweepInterval`. What Node lacks is a cap that a flood cannot turn against honest clients:
// past `max_connections` an idle connection is closed to make room (the longest-waiting of those
// that never sent a request first, then of those kept alive after an answer), so a flood of idle
// sockets never locks out a client that sends its request; a new connection is refused only when
// every one held is busy with a request. Keep the cap above the listen backlog (511): one turn
// of the event loop accepts at most that many, so a client whose request head is on its way is
// never pushed out by one burst.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface ConnectionLimits {
  /** From arriving (or from the first byte of the next request) to a complete request head. */
  headers_timeout_ms: number;
  /** Receiving one whole request, body included (Node's requestTimeout); the answer is not bounded. */
  request_timeout_ms: number;
  /** How long a connection may wait, idle, for its next request after an answer. */
  keep_alive_timeout_ms: number;
  /** Connections held at once; past it an idle one makes room. */
  max_connections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headers_timeout_ms: 10_000,
  request_timeout_ms: 60_000,
  keep_alive_timeout_ms: 5_000,
  max_connections: 1_000,
};

/** What the guard holds and did, for tests and metrics. */
export interface ConnectionStats {
  /** Connections held now. */
  open: number;
  /** Of those, the ones with no request in flight. */
  waiting: number;
  /** Closed to make room for a new connection past max_connections. */
  evicted: number;
  /** Refused on arrival: max_connections reached and every connection busy with a request. */
  refused: number;
}

/** How often Node looks for a head or request past its time: so a socket overstays by a tenth at most. */
export function sweepInterval(limits: Pick<ConnectionLimits, "headers_timeout_ms">): number {
  return Math.min(1_000, Math.max(50, Math.round(limits.headers_timeout_ms / 10)));
}

export class ConnectionGuard {
  /** Every connection held, with how many of its requests are in flight. */
  private readonly held = new Map<Socket, { busy: number }>();
  /** With no request in flight, longest-waiting first: those that never sent one... */
  private readonly fresh = new Set<Socket>();
  /** ...and those kept alive after an answer, which have shown they speak HTTP, so make room last. */
  private readonly kept = new Set<Socket>();
  private readonly counts = { evicted: 0, refused: 0 };

  constructor(
    server: Server,
    private readonly limits: ConnectionLimits,
  ) {
    server.headersTimeout = limits.headers_timeout_ms;
    server.requestTimeout = limits.request_timeout_ms;
    server.keepAliveTimeout = limits.keep_alive_timeout_ms;
    // Read when the server starts listening (Node's types know it only as a createServer option).
    (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
      sweepInterval(limits);
    server.on("connection", (socket: Socket) => this.arrived(socket));
    server.on("request", (request: IncomingMessage, response: ServerResponse) =>
      this.requested(request.socket, response),
    );
  }

  stats(): ConnectionStats {
    return { open: this.held.size, waiting: this.fresh.size + this.kept.size, ...this.counts };
  }

  private arrived(socket: Socket): void {
    if (this.held.size >= this.limits.max_connections) {
      const oldest = this.fresh.size > 0 ? this.fresh.values().next() : this.kept.values().next();
      if (oldest.done === true) {
        this.counts.refused++;
        socket.destroy();
        return;
      }
      this.counts.evicted++;
      this.forget(oldest.value);
      oldest.value.destroy();
    }
    this.held.set(socket, { busy: 0 });
    this.fresh.add(socket);
    socket.once("close", () => this.forget(socket));
  }

  private requested(socket: Socket, response: ServerResponse): void {
    const state = this.held.get(socket);
    if (state === undefined) return;
    state.busy++;
    this.fresh.delete(socket);
    this.kept.delete(socket);
    response.once("close", () => {
      state.busy--;
      // Waiting again, last in line.
      if (state.busy === 0 && this.held.has(socket)) this.kept.add(socket);
    });
  }

  private forget(socket: Socket): void {
    this.held.delete(socket);
    this.fresh.delete(socket);
    this.kept.delete(socket);
  }
}
