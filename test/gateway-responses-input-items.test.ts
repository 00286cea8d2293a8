// GET /v1/responses/ID/input_items through the official openai client's
// `responses.inputItems.list(id)` (its auto-pagination follows `after`), in both modes, over a real
// socket: the items a response was made from (its chain's inputs and outputs, then its own input),
// newest first by default, with ids and statuses; and the same auth and errors as GET /v1/responses/ID.
import OpenAI from "openai";
import type { ResponseItem } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { type GatewayApp, startGatewayApp } from "./helpers/gateway-app.js";

const client = (app: GatewayApp, key = app.key) =>
  new OpenAI({ baseURL: `${app.url}/v1`, apiKey: key, maxRetries: 0 });

async function all(openai: OpenAI, id: string, query: OpenAI.Responses.InputItemListParams = {}) {
  const items: ResponseItem[] = [];
  for await (const item of openai.responses.inputItems.list(id, query)) items.push(item);
  return items;
}

/** An item as type, role and text, to compare lists by what they say. */
function said(item: ResponseItem): string {
  if (item.type === "message") {
    const text = item.content.map((p) => ("text" in p ? p.text : p.type)).join("");
    return `${item.role}: ${text}`;
  }
  if (item.type === "function_call") return `call ${item.name}(${item.arguments})`;
  if (item.type === "function_call_output") return `output ${JSON.stringify(item.output)}`;
  return item.type;
}

describe("GET /v1/responses/ID/input_items", () => {
  it("model tenax: lists the chain and the new input, newest first, and pages with after", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const first = await openai.responses.create({
      model: "tenax",
      instructions: "answer briefly",
      input: "the word is pineapple",
    });
    const second = await openai.responses.create({
      model: "tenax",
      input: "what was the word?",
      previous_response_id: first.id,
    });

    const items = await all(openai, second.id);
    expect(items.map(said)).toEqual([
      "user: what was the word?",
      "assistant: echo: the word is pineapple",
      "user: the word is pineapple",
    ]);
    for (const item of items) expect(item).toMatchObject({ id: expect.any(String), status: "completed" });
    expect(new Set(items.map((i) => i.id)).size).toBe(3);
    // The answer listed is the one the first response gave, with its own id.
    expect(items[1]?.id).toBe(first.output[0]?.id);
    expect(items[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text" }] });

    // One item a page, oldest first: the client follows `after` through every page.
    const paged = await all(openai, second.id, { order: "asc", limit: 1 });
    expect(paged.map(said)).toEqual([...items].reverse().map(said));
    expect(paged.map((i) => i.id)).toEqual([...items].reverse().map((i) => i.id));

    const page = await openai.responses.inputItems.list(second.id, { limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    const body = (await (
      await fetch(`${app.url}/v1/responses/${second.id}/input_items?limit=2`, {
        headers: { authorization: `Bearer ${app.key}` },
      })
    ).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: "list",
      first_id: items[0]?.id,
      last_id: items[1]?.id,
      has_more: true,
    });
    // The ids stay the same from one call to the next, so `after` keeps its place.
    expect((await all(openai, second.id)).map((i) => i.id)).toEqual(items.map((i) => i.id));
  });

  it("model PROVIDER/NAME: a function call and its output are items too", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    app.sim.script([
      { type: "tool_calls", calls: [{ id: "call_1", name: "lookup", arguments: { q: "tenax" } }] },
    ]);
    const tool = { type: "function" as const, name: "lookup", parameters: { type: "object" }, strict: false };
    const first = await openai.responses.create({ model: "sim/echo", input: "look it up", tools: [tool] });
    expect(first.output[0]).toMatchObject({ type: "function_call", call_id: "call_1" });
    const second = await openai.responses.create({
      model: "sim/echo",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: "call_1", output: "tenacious" }],
      tools: [tool],
    });
    const items = await all(openai, second.id, { order: "asc" });
    expect(items.map(said)).toEqual(["user: look it up", 'call lookup({"q":"tenax"})', 'output "tenacious"']);
    expect(items[2]).toMatchObject({ type: "function_call_output", call_id: "call_1", status: "completed" });
  });

  it("has the auth and the errors of GET /v1/responses/ID", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const made = await openai.responses.create({ model: "tenax", input: "hello" });
    const unstored = await openai.responses.create({ model: "tenax", input: "forget me", store: false });

    const wrongKey = await all(client(app, "nope"), made.id).catch((e: unknown) => e);
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    for (const id of ["resp_nope", unstored.id]) {
      const missing = await all(openai, id).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("response_not_found");
      const got = await openai.responses.retrieve(id).catch((e: unknown) => e);
      expect((got as Error).message).toBe((missing as Error).message);
    }

    const bad = async (query: string) => {
      const response = await fetch(`${app.url}/v1/responses/${made.id}/input_items?${query}`, {
        headers: { authorization: `Bearer ${app.key}` },
      });
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: { message: string; param: string | null } }).error;
    };
    expect(await bad("limit=0")).toMatchObject({
      param: "limit",
      message: expect.stringMatching(/^limit: /),
    });
    expect(await bad("limit=101")).toMatchObject({ param: "limit" });
    expect(await bad("order=sideways")).toMatchObject({ param: "order" });
    expect(await bad("after=msg_unknown")).toMatchObject({ param: "after" });
    expect(await bad("include[]=everything")).toMatchObject({ param: "include" });
    expect(await bad("cursor=1")).toMatchObject({ param: "cursor" });
    // OpenAI's own include values are taken (none adds anything to these items).
    const included = await all(openai, made.id, { include: ["message.input_image.image_url"] });
    expect(included.map(said)).toEqual(["user: hello"]);
  });
});
