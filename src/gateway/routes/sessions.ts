// GET /api/sessions (a page of sessions, each with whether a turn runs and how many wait) and GET /api/sessions/ID
// (with its messages).
import { z } from "zod";
import type { App } from "../../http/app.js";
import { badRequest } from "../../http/http-error.js";
import type { GatewayRouteDeps } from "../app.js";
import { unknownSession } from "../gateway-errors.js";

const PAGE_PROBLEM = "limit must be 1 to 1000 and offset 0 or more";
// A safe integer: SQLite cannot take 1e20 as an OFFSET ("datatype mismatch", once a 500).
const whole = (min: number, max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const value = raw === undefined ? fallback : Number(raw);
      if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
      ctx.addIssue({ code: "custom", message: PAGE_PROBLEM, params: { code: "invalid_query" } });
      return z.NEVER;
    });
const page = z.object({ limit: whole(1, 1000, 50), offset: whole(0, Number.MAX_SAFE_INTEGER, 0) });

export function registerSessionRoutes(app: App, deps: GatewayRouteDeps): void {
  const { store, gateway } = deps;
  app.get("/api/sessions", async (request) => {
    const parsed = page.safeParse(request.query);
    if (!parsed.success) throw badRequest("invalid_query", PAGE_PROBLEM);
    const data = await store.listSessions(parsed.data);
    return { object: "list", data: data.map((s) => ({ ...s, ...gateway.busy(s.id) })) };
  });
  app.get<{ Params: { id: string } }>("/api/sessions/:id", async (request, reply) => {
    const id = request.params.id;
    const session = await store.getSession(id);
    if (!session) throw unknownSession(id);
    const messages = await store.getMessages(id);
    return reply.header("x-session-id", id).send({ ...session, ...gateway.busy(id), messages });
  });
}
