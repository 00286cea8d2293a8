// A response chain read back from the store: the response a request continues, and every stored
// input and output item before it, oldest first, to replay as history where no session holds it.
import { z } from "zod";
import { HttpError } from "../../http/http-error.js";
import type { ResponseView } from "../../store/response-rows.js";
import { type InputItem, inputItemSchema } from "./request.js";
import { type OutputItem, outputAsInput } from "./response-object.js";

/** What the Responses routes need of the store. */
export interface ResponseStore {
  getResponse(id: string): ResponseView | null;
  latestResponseId(sessionId: string): string | null;
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
export function storedResponse(store: ResponseStore, id: string): ResponseView {
  const found = store.getResponse(id);
  if (found === null) throw responseNotFound(id);
  return found;
}

/** Every item of the chain that ends with `last` (its input and output included), oldest first. */
export function replayChain(store: ResponseStore, last: ResponseView): InputItem[] {
  const links: ResponseView[] = [last];
  const seen = new Set([last.id]);
  for (let at = last; at.previous_response_id !== null; ) {
    const previous = store.getResponse(at.previous_response_id);
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
  const items = links
    .reverse()
    .flatMap((link) => [...link.input, ...outputAsInput(link.output as OutputItem[])]);
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
