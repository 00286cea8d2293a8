// A message's stored tool calls, read back whatever shape they were written in: the agent stores
// its own calls as {id, name, arguments}, the gateway's model mode as the OpenAI wire format
// {id, type, function: {name, arguments}}. Nothing else is trusted: a missing id or name is null.

export interface StoredToolCall {
  id: string | null;
  name: string | null;
  /** The arguments as the model wrote them (JSON text); "{}" when none were stored. */
  arguments: string;
}

export function storedToolCalls(raw: readonly unknown[] | null): StoredToolCall[] {
  return (raw ?? []).map((item) => {
    const call = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const fn = (typeof call.function === "object" && call.function !== null ? call.function : call) as Record<
      string,
      unknown
    >;
    const args = fn.arguments;
    return {
      id: typeof call.id === "string" ? call.id : null,
      name: typeof fn.name === "string" ? fn.name : null,
      arguments: typeof args === "string" ? args : args === undefined ? "{}" : JSON.stringify(args),
    };
  });
}
