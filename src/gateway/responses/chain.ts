// A response chain read back from the store: the response a request continues, and every stored
// input and output item before it, oldest first, to replay as history where no session holds it;
// and the stored output items a request names by `item_reference`.
import { z } from "zod";
import { HttpError } from "../../http/http-error.js";
import type { ResponseView } from "../../store/response-rows.js";
import { type InputItem, inputItemSchema } from "./request.js";
import { type OutputItem, outputAsInput } from "./response-object.js";

/** What the Responses routes need of the store. */
export interface ResponseStore {
  getResponse(id: string): Promise<ResponseView | null>;
  latestResponseId(sessionId: string): Promise<string | null>;
  /** The newest stored response with an output item of this id. */
  responseWithItem(itemId: string): Promise<ResponseView | null>;
}

/** Longest chain replayed: far past any real conversation, short of a loop through bad rows. */
const MAX_CHAIN = 10_000;

const itemsSchema = z.array(inputItemSchema);

export function responseNotFound(
  id: string,
  detail = "",
  param: string | null = "previous_response_id",
): HttpError {
  return new HttpError(
    404,
    "not_found_error",
    "response_not_found",
    `no stored response ${id}${detail}; a response made with store: false, deleted, or from another profile cannot be continued or read (send the whole conversation as input instead)`,
    {},
    { error: { param } },
  );
}

/** The stored response `id`, or a 404 response_not_found. */
export async function storedResponse(store: ResponseStore, id: string): Promise<ResponseView> {
  const found = await store.getResponse(id);
  if (found === null) throw responseNotFound(id);
  return found;
}

/** The stored responses of the chain that ends with `last`, oldest first (`last` included). */
export async function chainLinks(store: ResponseStore, last: ResponseView): Promise<ResponseView[]> {
  const links: ResponseView[] = [last];
  const seen = new Set([last.id]);
  for (let at = last; at.previous_response_id !== null; ) {
    const previous = await store.getResponse(at.previous_response_id);
    if (previous === null)
      throw responseNotFound(
        at.previous_response_id,
        ` (response ${at.id} continues it, so its chain is broken)`,
      );
    if (seen.has(previous.id) || links.length >= MAX_CHAIN)
      throw new HttpError(
        500,
        "server_error",
        "response_chain_invalid",
        `the stored chain of response ${last.id} loops or is longer than ${MAX_CHAIN} responses at ${previous.id}; start a new conversation`,
      );
    seen.add(previous.id);
    links.push(previous);
    at = previous;
  }
  return links.reverse();
}

/** Every item of the chain that ends with `last` (its input and output included), oldest first. */
export async function replayChain(store: ResponseStore, last: ResponseView): Promise<InputItem[]> {
  const items = (await chainLinks(store, last)).flatMap((link) => [
    ...link.input,
    ...outputAsInput(link.output as OutputItem[]),
  ]);
  const parsed = itemsSchema.safeParse(items);
  if (!parsed.success)
    throw new HttpError(
      500,
      "server_error",
      "response_chain_invalid",
      `the stored chain of response ${last.id} holds an item that cannot be replayed (${parsed.error.issues[0]?.message ?? "invalid"}); start a new conversation`,
    );
  return parsed.data;
}

/**
 * The body with each `item_reference` in its input replaced by the stored output item it names, as
 * an input item: the AI SDK's OpenAI provider sends back what a stored response said this way (in its
 * own tool loop too, for text said before a tool call). An item no stored response holds is a 404.
 */
export async function resolveItemReferences(body: unknown, store: ResponseStore): Promise<unknown> {
  if (typeof body !== "object" || body === null) return body;
  const input = (body as { input?: unknown }).input;
  if (!Array.isArray(input) || !input.some(isReference)) return body;
  return {
    ...body,
    input: await Promise.all(
      input.map(async (item, i) => (isReference(item) ? await referenced(store, item.id, i) : item)),
    ),
  };
}

function isReference(item: unknown): item is { type: "item_reference"; id?: unknown } {
  return typeof item === "object" && item !== null && (item as { type?: unknown }).type === "item_reference";
}

async function referenced(store: ResponseStore, id: unknown, i: number): Promise<InputItem> {
  const param = `input.${i}.id`;
  if (typeof id !== "string" || id === "")
    throw new HttpError(
      400,
      "invalid_request_error",
      "invalid_field",
      `input[${i}].id: expected the id of an output item of a stored response`,
      {},
      { error: { param } },
    );
  const output = ((await store.responseWithItem(id))?.output ?? []) as OutputItem[];
  const [item] = outputAsInput(output.filter((o) => o.id === id));
  if (item === undefined)
    throw new HttpError(
      404,
      "not_found_error",
      "item_not_found",
      `input[${i}]: no stored output item ${id}; an item of a response made with store: false, deleted, or from another profile cannot be referenced (send the item itself instead)`,
      {},
      { error: { param } },
    );
  return item;
}
